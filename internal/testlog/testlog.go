package testlog

import (
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
