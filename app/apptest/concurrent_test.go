//go:build linux

package apptest

import (
	"errors"
	"testing"
	"time"
)

// TestConcurrentChatsOnTheRing is issue 19 item 3 through the agent's API:
// three agents in network namespaces, one ring; a second chat sent while
// the first streams joins its ring job as another stream (engine/ring/job)
// instead of waiting for it, and each reply is the one it gets alone.
func TestConcurrentChatsOnTheRing(t *testing.T) {
	env := NewEnv(t)
	nodes := []*Node{env.NewNode(t, "a"), env.NewNode(t, "b"), env.NewNode(t, "c")}
	head := nodes[0]
	contributing(t, 512, nodes...)
	pairWorkers(t, head, nodes[1:]...)
	// Long replies, so that the first is still streaming when the second
	// starts (stories260K runs hundreds of tokens a second).
	args := func(prompt string) []string {
		return []string{"-m", stories260K, "-n", "400", "--devices", "all", "--rounds", "1", "--raw", prompt}
	}
	prompts := []string{"Once upon a time", "The little dog ran to the park and"}
	var solo []string
	for _, p := range prompts {
		reply, st := chat(t, head, args(p)...)
		if st.Ring == nil || len(st.Ring.Devices) != len(nodes) {
			t.Fatalf("the solo chat %q ran on %+v; want the ring of all %d devices", p, st.Ring, len(nodes))
		}
		solo = append(solo, reply)
	}

	first := startChat(t, head, args(prompts[0])...)
	WaitFor(t, 30*time.Second, "the first chat's first tokens", func() error {
		if len(first.reply()) == 0 {
			return errors.New("no output yet")
		}
		return nil
	})
	sent := time.Now()
	second := startChat(t, head, args(prompts[1])...)
	r2, st2 := second.wait(t, 2*time.Minute)
	r1, st1 := first.wait(t, 2*time.Minute)
	for i, c := range []struct {
		got  string
		ring bool
	}{{r1, st1.Ring != nil}, {r2, st2.Ring != nil}} {
		if !c.ring {
			t.Errorf("chat %d ran off the ring", i+1)
		}
		if c.got != solo[i] {
			t.Errorf("chat %d, sent beside the other, replied differently from alone:\n got:  %q\n want: %q", i+1, c.got, solo[i])
		}
	}
	// Overlap: the second reply's first token came while the first was
	// still streaming (queued, it would come after the first's last).
	at2, ok := second.firstAfter(sent)
	if !ok {
		t.Fatal("the second chat streamed nothing")
	}
	first.mu.Lock()
	last1 := first.pieces[len(first.pieces)-1]
	first.mu.Unlock()
	t.Logf("second chat's first token %s after it was sent; the first chat's last output %s after it", at2.Sub(sent).Round(time.Millisecond), last1.Sub(sent).Round(time.Millisecond))
	if !at2.Before(last1) {
		t.Errorf("the second chat's first token came %s after the first chat's last output: it waited instead of running beside it", at2.Sub(last1).Round(time.Millisecond))
	}
}
