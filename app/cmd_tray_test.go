package app

import (
	"errors"
	"homering/internal/testdir"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestUsableStderr: the log goes to a file when stderr is missing (a
// Windows GUI process), closed, or (off Windows) the null device, and stays
// on stderr when it is a file or a pipe.
func TestUsableStderr(t *testing.T) {
	dir := testdir.Scratch(t)
	file, err := os.Create(filepath.Join(dir, "err"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	closed, err := os.Create(filepath.Join(dir, "closed"))
	if err != nil {
		t.Fatal(err)
	}
	_ = closed.Close() // closed on purpose: Stat on it must fail
	cases := []struct {
		name string
		f    *os.File
		want bool
	}{
		{"a file", file, true},
		{"a pipe", w, true},
		{"none", nil, false},
		{"closed", closed, false},
		{"the null device", null, runtime.GOOS == "windows"}, // see usableStderr
	}
	if runtime.GOOS == "windows" {
		// A GUI process started from Explorer: GetStdHandle gives NULL.
		cases = append(cases, struct {
			name string
			f    *os.File
			want bool
		}{"a NULL handle", os.NewFile(0, "stderr"), false})
	}
	for _, tc := range cases {
		if got := usableStderr(tc.f); got != tc.want {
			t.Errorf("usableStderr(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOpenAgentLog: agent.log in the config directory (created) is
// appended to, and one grown past agentLogMax moves to agent.log.old.
func TestOpenAgentLog(t *testing.T) {
	dir := filepath.Join(testdir.Scratch(t), "config")
	write := func(s string) {
		f, err := openAgentLog(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("one\n")
	write("two\n")
	name := filepath.Join(dir, "agent.log")
	if b, _ := os.ReadFile(name); string(b) != "one\ntwo\n" {
		t.Fatalf("agent.log = %q, want both lines", b)
	}
	if err := os.WriteFile(name, []byte(strings.Repeat("x", agentLogMax+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	write("three\n")
	if b, _ := os.ReadFile(name); string(b) != "three\n" {
		t.Errorf("after the log outgrew %d bytes, agent.log = %.20q, want a new file", agentLogMax, b)
	}
	if st, err := os.Stat(name + ".old"); err != nil || st.Size() != agentLogMax+1 {
		t.Errorf("agent.log.old: %v, %v", st, err)
	}
}

// TestLockAgent: one agent lock per config directory (flock on Unix,
// LockFileEx on Windows): a second take fails with errAgentLocked until the
// first is released.
func TestLockAgent(t *testing.T) {
	dir := filepath.Join(testdir.Scratch(t), "config")
	unlock, err := lockAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockAgent(dir); !errors.Is(err, errAgentLocked) {
		t.Fatalf("second lock: %v, want errAgentLocked", err)
	}
	unlock()
	unlock2, err := lockAgent(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}
