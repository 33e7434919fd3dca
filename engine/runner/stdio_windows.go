package runner

import (
	"fmt"
	"os"
	"os/exec"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The C runtime the mingw build links (msvcrt.dll, one copy per process): its
// file descriptor 1 is what printf in ggml and llama.cpp writes to.
var procDup2 = windows.NewLazySystemDLL("msvcrt.dll").NewProc("_dup2")

// protocolStdout returns a duplicate of the stdout handle for the protocol and
// points everything else that writes to stdout at stderr: the C runtime's fd 1
// (_dup2, which also closes the original handle: hence the duplicate first),
// the process's standard handle, and os.Stdout, whose handle that close just
// invalidated. So anything the engine's C code prints lands in the log
// instead of in the middle of a JSON line. (os.NewFile(1) is not a handle on
// Windows: writes to it fail with "Invalid handle".)
func protocolStdout() (*os.File, error) {
	self := windows.CurrentProcess()
	out, err := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
	if err != nil {
		return nil, fmt.Errorf("GetStdHandle(stdout): %w", err)
	}
	errh, err := windows.GetStdHandle(windows.STD_ERROR_HANDLE)
	if err != nil {
		return nil, fmt.Errorf("GetStdHandle(stderr): %w", err)
	}
	var dup windows.Handle
	// Not inheritable: a process the engine starts must not hold the pipe open.
	if err := windows.DuplicateHandle(self, out, self, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return nil, fmt.Errorf("DuplicateHandle(stdout): %w", err)
	}
	fail := func(err error) (*os.File, error) {
		_ = windows.CloseHandle(dup) // the error that matters is err
		return nil, err
	}
	if err := procDup2.Find(); err != nil {
		return fail(err)
	}
	if r, _, _ := procDup2.Call(2, 1); int32(r) != 0 {
		return fail(fmt.Errorf("msvcrt _dup2(2, 1) failed"))
	}
	if err := windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, errh); err != nil {
		return fail(fmt.Errorf("SetStdHandle(stdout): %w", err))
	}
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(dup), "runner-protocol"), nil
}

// childAttrs starts the child without a console window: the exe is a
// console program, so under a GUI agent (which has no console to share)
// Windows would open one for it. Its stdin, stdout and stderr are pipes.
func childAttrs(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &windows.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NO_WINDOW
}

// childStarted puts the child in a job object that kills it when the job's
// last handle closes: the agent holds that handle, so the child dies with
// the agent however the agent ends (the counterpart of Linux's Pdeathsig).
// The handle is closed once the child has exited. The child runs unjoined
// for the moment between CreateProcess and here; it starts no processes, so
// nothing can escape the job in that moment.
func childStarted(cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("CreateJobObject: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return fmt.Errorf("SetInformationJobObject: %w", err)
	}
	// The PID cannot be reused yet: os/exec holds the process handle until Wait.
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return fmt.Errorf("OpenProcess: %w", err)
	}
	if err := windows.AssignProcessToJobObject(job, ph); err != nil {
		_ = windows.CloseHandle(ph)
		_ = windows.CloseHandle(job)
		return fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	go func() {
		// Returns when the child ends (or at once if the wait itself fails:
		// then the job closes early, which only loosens the tie).
		_, _ = windows.WaitForSingleObject(ph, windows.INFINITE)
		_ = windows.CloseHandle(ph)
		_ = windows.CloseHandle(job)
	}()
	return nil
}
