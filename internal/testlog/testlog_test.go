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
