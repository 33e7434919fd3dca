package sysinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestParseRssAnon(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"Name:\tx\nVmRSS:\t  900 kB\nRssAnon:\t   1234 kB\nRssFile:\t 10 kB\n", 1234 * 1024},
		{"Name:\tx\nRssFile:\t 10 kB\n", 0},
		{"Name:\tx\nRssAnon:\t\n", 0},
	} {
		if got := parseRssAnon([]byte(tc.in)); got != tc.want {
			t.Errorf("parseRssAnon(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if ProcessAnon() <= 0 {
		t.Error("this process holds no anonymous memory, says /proc/self/status")
	}
}

// Another process's anonymous memory: a child holding 64 MiB of touched
// private memory reports at least that; no process, none.
func TestProcessAnonOf(t *testing.T) {
	if os.Getenv("SYSINFO_ANON_CHILD") == "1" {
		// The child: 64 MiB touched, held until stdin closes.
		b := make([]byte, 64<<20)
		for i := range b {
			b[i] = 1
		}
		fmt.Println("up")
		_, _ = io.Copy(io.Discard, os.Stdin)
		runtime.KeepAlive(b)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessAnonOf$")
	cmd.Env = append(os.Environ(), "SYSINFO_ANON_CHILD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if got := ProcessAnonOf(cmd.Process.Pid); got < 64<<20 {
		t.Errorf("a child holding 64 MiB: ProcessAnonOf = %d bytes", got)
	}
	_ = in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := ProcessAnonOf(cmd.Process.Pid); got != 0 {
		t.Errorf("an exited child: ProcessAnonOf = %d, want 0", got)
	}
	if got := ProcessAnonOf(0); got != 0 {
		t.Errorf("ProcessAnonOf(0) = %d, want 0", got)
	}
}
