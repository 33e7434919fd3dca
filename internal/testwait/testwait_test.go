package testwait

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	var n atomic.Int32
	d := For(t, 5*time.Second, "the third poll", func() error {
		if n.Add(1) < 3 {
			return errors.New("too early")
		}
		return nil
	})
	if n.Load() != 3 || d < 2*Poll {
		t.Errorf("%d polls in %v, want 3 in at least %v", n.Load(), d, 2*Poll)
	}
	if True(t, time.Second, "at once", func() bool { return true }) > Poll {
		t.Error("a condition already true waited")
	}
}

// A condition that never holds fails the test with what and its last error.
func TestForTimesOut(t *testing.T) {
	ft := &fakeTB{TB: t}
	ForEvery(ft, 30*time.Millisecond, time.Millisecond, "the sky to fall", func() error { return errors.New("it holds") })
	if ft.msg != "the sky to fall: not true after 30ms: it holds" {
		t.Errorf("failure %q", ft.msg)
	}
}

type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}
