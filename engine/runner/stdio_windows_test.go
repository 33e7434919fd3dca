package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The other tests of this package use signals and /proc and are not built
// for Windows; this TestMain serves the helper processes of the tests below.
const winHelperEnv = "HOMERING_RUNNER_WINHELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(winHelperEnv) {
	case "child":
		helperChildStdout()
	case "agent":
		helperAgent()
	case "sleeper":
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperCommand(role string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), winHelperEnv+"="+role)
	return cmd
}

// helperChildStdout starts like `homering runner`, then writes to stdout by
// every route C or Go code could take, and once to the protocol.
func helperChildStdout() {
	proto, err := protocolStdout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "protocolStdout:", err)
		os.Exit(1)
	}
	c := []byte("from C fd 1\n")
	// The test reads where it went; its result is not needed here.
	_, _, _ = windows.NewLazySystemDLL("msvcrt.dll").NewProc("_write").Call(1, uintptr(unsafe.Pointer(&c[0])), uintptr(len(c)))
	fmt.Fprint(os.Stdout, "from os.Stdout\n")
	h, err := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
	if err == nil {
		err = windows.WriteFile(h, []byte("from STD_OUTPUT_HANDLE\n"), nil, nil)
	}
	if err == nil {
		_, err = proto.WriteString("protocol line\n")
	}
	if err == nil {
		err = proto.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestWindowsProtocolStdout: after protocolStdout the child's stdout pipe
// carries the protocol alone; what C and Go print to "stdout" goes to stderr.
func TestWindowsProtocolStdout(t *testing.T) {
	cmd := helperCommand("child")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr.String())
	}
	if stdout.String() != "protocol line\n" {
		t.Errorf("stdout (the protocol pipe) = %q, want only the protocol line", stdout.String())
	}
	for _, s := range []string{"from C fd 1", "from os.Stdout", "from STD_OUTPUT_HANDLE"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr lacks %q: %q", s, stderr.String())
		}
	}
}

// helperAgent starts a child as the supervisor does, prints its PID and waits
// to be killed.
func helperAgent() {
	cmd := helperCommand("sleeper")
	childAttrs(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(1)
	}
	if err := childStarted(cmd); err != nil {
		fmt.Fprintln(os.Stderr, "childStarted:", err)
		_ = cmd.Process.Kill() // exiting anyway
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	time.Sleep(2 * time.Minute)
	os.Exit(0)
}

// TestWindowsChildDiesWithAgent: a child that ignores its stdin and would
// sleep for two minutes ends within seconds of its agent being killed (the
// job object's kill-on-close), and not before.
func TestWindowsChildDiesWithAgent(t *testing.T) {
	agent := helperCommand("agent")
	var stderr bytes.Buffer
	agent.Stderr = &stderr
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = agent.Process.Kill() }() // already dead on success
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = agent.Wait() // its stderr says why
		t.Fatalf("agent: %v; stderr:\n%s", err, stderr.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("agent printed %q", line)
	}
	child, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		t.Fatalf("OpenProcess(child %d): %v", pid, err)
	}
	defer func() { _ = windows.CloseHandle(child) }()
	defer func() { _ = windows.TerminateProcess(child, 1) }() // on failure only
	if ev, _ := windows.WaitForSingleObject(child, 500); ev != uint32(windows.WAIT_TIMEOUT) {
		t.Fatalf("the child ended while its agent still ran (wait: %#x)", ev)
	}
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait() // killed: its error is the kill
	start := time.Now()
	if ev, _ := windows.WaitForSingleObject(child, 10000); ev != windows.WAIT_OBJECT_0 {
		t.Fatalf("the child outlived its killed agent by 10 s (wait: %#x)", ev)
	}
	t.Logf("the child ended %v after its agent was killed", time.Since(start).Round(time.Millisecond))
}
