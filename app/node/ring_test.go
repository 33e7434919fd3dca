package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/identity"
	"homering/engine/ring/transport"
	"homering/halda"
)

// fakeWorker stands in for the engine at the Worker boundary; the real one
// (app/agent/chat.go with the runner child) is tested end to end in app/apptest.
type fakeWorker struct {
	mu      sync.Mutex
	allowed [][]identity.DeviceID
	err     error
}

func (f *fakeWorker) RingProfile() (halda.Device, bool) {
	return halda.Device{Name: "ignored", OS: halda.Linux, CPUFlops: map[string]float64{"f32": 1e9}, RAMAvailable: 1 << 30}, true
}

func (f *fakeWorker) ServeRing(_ context.Context, allowed []identity.DeviceID) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allowed = append(f.allowed, allowed)
	return "[::]:41234", f.err
}

// pair pairs head with worker (which must be contributing).
func pair(t *testing.T, head, worker *Node) {
	t.Helper()
	show, err := worker.ShowCode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := head.EnterCode(context.Background(), loopAddr(worker), show.Code); err != nil {
		t.Fatal(err)
	}
	if _, err := head.AddPeer(context.Background(), loopAddr(worker)); err != nil {
		t.Fatal(err)
	}
}

func TestRingControl(t *testing.T) {
	ctx := context.Background()
	worker, head, stranger := testNode(t, "worker", true), testNode(t, "head", false), testNode(t, "stranger", false)
	pair(t, head, worker)
	wid := worker.o.Identity.ID

	t.Run("no engine wired: refused with a reason", func(t *testing.T) {
		_, err := head.AskProfileHidden(ctx, wid, 16384)
		if !errors.Is(err, ErrRingRefused) {
			t.Fatalf("AskProfile = %v, want ErrRingRefused", err)
		}
		if _, err := head.AskJob(ctx, wid, JobAsk{}); !errors.Is(err, ErrRingRefused) {
			t.Fatalf("AskJob = %v, want ErrRingRefused", err)
		}
	})

	fw := &fakeWorker{}
	worker.SetWorker(fw)
	t.Run("profile named by device ID, link timed", func(t *testing.T) {
		p, err := head.AskProfileHidden(ctx, wid, 16384)
		if err != nil {
			t.Fatal(err)
		}
		if p.Device.Name != wid.String() || !p.Measured || p.Device.CPUFlops["f32"] != 1e9 || p.RTT <= 0 || p.HiddenRTT <= 0 {
			t.Errorf("profile %+v rtt %v/%v: want the worker's, named %s, with positive RTTs", p.Device, p.RTT, p.HiddenRTT, wid)
		}
	})
	t.Run("job: the engine serves the paired set; address resolved", func(t *testing.T) {
		addr, err := head.AskJob(ctx, wid, JobAsk{Model: "m.gguf"})
		if err != nil {
			t.Fatal(err)
		}
		if addr != "127.0.0.1:41234" {
			t.Errorf("ring address %q, want the link's host with the engine's port", addr)
		}
		fw.mu.Lock()
		defer fw.mu.Unlock()
		want := [][]identity.DeviceID{{head.o.Identity.ID}}
		if diff := cmp.Diff(want, fw.allowed); diff != "" {
			t.Errorf("allowed (-want +got):\n%s", diff)
		}
	})
	t.Run("engine failure is a refusal with its reason", func(t *testing.T) {
		fw.mu.Lock()
		fw.err = errors.New("model cache full")
		fw.mu.Unlock()
		_, err := head.AskJob(ctx, wid, JobAsk{})
		if !errors.Is(err, ErrRingRefused) || !strings.Contains(err.Error(), "model cache full") {
			t.Errorf("AskJob = %v, want a refusal naming the engine's error", err)
		}
	})
	t.Run("an unpaired device cannot ask", func(t *testing.T) {
		if _, err := stranger.AddPeer(ctx, loopAddr(worker)); err != nil {
			t.Fatal(err)
		}
		if _, err := stranger.AskProfile(ctx, wid); !errors.Is(err, ErrNotPaired) {
			t.Errorf("AskProfile from a stranger = %v, want ErrNotPaired", err)
		}
	})
}

func TestRingAddr(t *testing.T) {
	tests := []struct {
		name, listen, remote, want string
		bad                        bool
	}{
		{name: "v6 any from v4 link", listen: "[::]:41000", remote: "10.0.0.2:47470", want: "10.0.0.2:41000"},
		{name: "v4 any", listen: "0.0.0.0:41000", remote: "[fe80::1%lan0]:47470", want: "[fe80::1%lan0]:41000"},
		{name: "empty host", listen: ":41000", remote: "10.0.0.2:47470", want: "10.0.0.2:41000"},
		{name: "explicit address kept", listen: "10.0.0.9:41000", remote: "10.0.0.2:47470", want: "10.0.0.9:41000"},
		{name: "port zero", listen: "[::]:0", remote: "10.0.0.2:47470", bad: true},
		{name: "no port", listen: "10.0.0.9", remote: "10.0.0.2:47470", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ringAddr(tt.listen, tt.remote)
			if (err != nil) != tt.bad || got != tt.want {
				t.Errorf("ringAddr(%q, %q) = %q, %v; want %q (error: %v)", tt.listen, tt.remote, got, err, tt.want, tt.bad)
			}
		})
	}
}

// A head's looks and job asks to a peer reuse one control link, and a link
// that died under it is replaced by a fresh one within the same call.
func TestControlLinkReused(t *testing.T) {
	ctx := context.Background()
	worker := testNode(t, "worker", true)
	head := testNode(t, "head", false)
	pair(t, head, worker)
	worker.SetWorker(&fakeWorker{})
	wid, hid := worker.o.Identity.ID, head.o.Identity.ID.String() // Unpair takes what a person types
	// The head's control link to the worker (nil: none up). Compared by
	// identity: a dial makes a new one. (Counting the worker's "link up"
	// lines raced with the late line of pairing's own probe link.)
	link := func() *transport.Conn {
		head.mu.Lock()
		l := head.ctl[worker.o.Identity.ID]
		head.mu.Unlock()
		if l == nil {
			return nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.c
	}
	if _, err := head.AskProfileHidden(ctx, wid, 4096); err != nil {
		t.Fatal(err)
	}
	first := link()
	if first == nil {
		t.Fatal("no control link is kept after a look")
	}
	for range 3 {
		if _, err := head.AskProfileHidden(ctx, wid, 4096); err != nil {
			t.Fatal(err)
		}
		if _, err := head.AskJob(ctx, wid, JobAsk{}); err != nil {
			t.Fatal(err)
		}
		if link() != first {
			t.Fatal("a look or job ask dialled a new link while the first was up")
		}
	}
	// The link dies (the peer restarted, a NAT forgot it): the next ask
	// notices and dials afresh, and the caller sees no error.
	_ = first.Close()
	if _, err := head.AskProfileHidden(ctx, wid, 4096); err != nil {
		t.Fatalf("ask over a dead link: %v, want a fresh link", err)
	}
	if l := link(); l == nil || l == first {
		t.Errorf("after the link died: link %p (first %p), want a new one", l, first)
	}
	// Unpairing on the worker's side refuses the old link's looks.
	if _, err := worker.Unpair(ctx, hid); err != nil {
		t.Fatal(err)
	}
	if _, err := head.AskProfileHidden(ctx, wid, 4096); err == nil {
		t.Error("a look after the worker unpaired was answered")
	}
}
