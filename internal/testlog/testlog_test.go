package testlog

import (
	"fmt"
	"testing"
)

// After the test that owns it ended, a write is dropped, not sent to a
// finished test (which would panic).
func TestWriteAfterEndIsDropped(t *testing.T) {
	var w interface{ Write([]byte) (int, error) }
	t.Run("owner", func(t *testing.T) {
		w = Writer(t)
		if n, err := fmt.Fprint(w, "during the test\n"); n != 16 || err != nil {
			t.Fatalf("write during the test = %d, %v", n, err)
		}
	})
	if n, err := fmt.Fprint(w, "after the end\n"); n != 14 || err != nil {
		t.Fatalf("write after the end = %d, %v", n, err)
	}
}

// Buffer keeps every write of concurrent writers whole, and Reset empties it.
func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				fmt.Fprint(&b, "0123456789")
			}
		}()
	}
	for range 4 {
		<-done
	}
	if got := len(b.String()); got != 4*100*10 {
		t.Errorf("buffer holds %d bytes, want %d", got, 4*100*10)
	}
	b.Reset()
	if got := b.String(); got != "" {
		t.Errorf("after Reset the buffer holds %q", got)
	}
}
