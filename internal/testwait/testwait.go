package testwait

import (
	"testing"
	"time"
)

// Poll is how often For checks: short enough that a wait costs little more
// than the event, long enough that polling a CLI does not load the machine.
const Poll = 10 * time.Millisecond

// For polls cond until it returns nil and returns how long that took; when
// timeout passes first it fails tb with what and cond's last error.
func For(tb testing.TB, timeout time.Duration, what string, cond func() error) time.Duration {
	tb.Helper()
	return ForEvery(tb, timeout, Poll, what, cond)
}

// ForEvery is For polling every poll.
func ForEvery(tb testing.TB, timeout, poll time.Duration, what string, cond func() error) time.Duration {
	tb.Helper()
	start := time.Now()
	var err error
	for {
		if err = cond(); err == nil {
			return time.Since(start)
		}
		if time.Since(start) >= timeout {
			tb.Fatalf("%s: not true after %s: %v", what, timeout, err)
			return 0
		}
		time.Sleep(poll) // the poll interval, not a wait for an outcome
	}
}

// True is For with a condition that reports only whether it holds.
func True(tb testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	tb.Helper()
	return For(tb, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}
