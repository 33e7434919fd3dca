package testlog

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type writer struct {
	t    testing.TB
	mu   sync.Mutex
	done bool // guarded by mu; set when the test ends
}

// Writer returns a writer that logs each write to t, trimmed, until t ends.
func Writer(t testing.TB) io.Writer {
	w := &writer{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// Logger is a text slog.Logger at level over Writer(t).
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer(t), &slog.HandlerOptions{Level: level}))
}

// Buffer is a bytes.Buffer that goroutines (a child's output pump, a
// server's logger) may write while the test reads it. The zero Buffer is
// empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer // guarded by mu
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written since the last Reset.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
