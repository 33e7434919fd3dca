package planner

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/discovery/deviceid"
	"homering/engine/ring"
	"homering/halda"
	"homering/halda/lpsolve"
)

// bigModel is a generated ~0.9 GB llama (16 layers of ~55 MB): only its
// header is read here.
const bigModel = "../../testdata/models/llama-1g-Q8_0.gguf"

const gib = 1 << 30

// peerNode stands in for app/node at the planner's seam: the peers it
// lists answer looks with the profiles given (app/apptest drives the real
// node through the same planner).
type peerNode struct {
	mu       sync.Mutex
	self     deviceid.ID
	peers    []apitype.Peer
	profiles map[deviceid.ID]halda.Device
	rtt      map[deviceid.ID]time.Duration
	down     map[deviceid.ID]bool
	asks     []int // hidden bytes of each look
}

func (n *peerNode) Status() apitype.Status {
	return apitype.Status{Device: apitype.Device{ID: n.self, Short: n.self.Short()}}
}

func (n *peerNode) Peers() apitype.Peers {
	n.mu.Lock()
	defer n.mu.Unlock()
	return apitype.Peers{Peers: slices.Clone(n.peers)}
}

func (n *peerNode) AskProfileHidden(ctx context.Context, peer deviceid.ID, hidden int) (node.PeerProfile, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.asks = append(n.asks, hidden)
	if n.down[peer] {
		return node.PeerProfile{}, errors.New("no route to host")
	}
	d := n.profiles[peer]
	d.Name = peer.String() // as app/node's peers name themselves
	return node.PeerProfile{Device: d, Measured: true, RTT: n.rtt[peer], HiddenRTT: 2 * n.rtt[peer]}, nil
}

// The rig's devices.
var (
	nHEAD = deviceid.ForName("HEAD")
	nB    = deviceid.ForName("B")
	nC    = deviceid.ForName("C")
	nD    = deviceid.ForName("D")
	nE    = deviceid.ForName("E")
)

// cpu is a measured desktop CPU with ram available.
func cpu(ram int64) halda.Device {
	return halda.Device{OS: halda.Linux, CPUFlops: map[string]float64{"q8_0": 50e9, "f32": 20e9}, CPUReadBytesPerSec: 10e9,
		RAMAvailable: ram, RAMTotal: 2 * ram, DiskSeqBytesPerSec: 1e9, DiskRandBytesPerSec: 300e6}
}

func rig(selfRAM, budget, peerBudget int64) (*peerNode, *Planner) {
	n := &peerNode{self: nHEAD, profiles: map[deviceid.ID]halda.Device{}, rtt: map[deviceid.ID]time.Duration{}, down: map[deviceid.ID]bool{}}
	for _, id := range []deviceid.ID{nB, nC} {
		n.peers = append(n.peers, apitype.Peer{ID: id, Short: id.Short(), Paired: true, Contribute: true, Visible: true})
		d := cpu(8 * gib)
		d.MemoryBudget = peerBudget
		n.profiles[id], n.rtt[id] = d, 2*time.Millisecond
	}
	// A stranger and a paired device with contribute off are not planned.
	n.peers = append(n.peers, apitype.Peer{ID: nD, Visible: true, Contribute: true},
		apitype.Peer{ID: nE, Visible: true, Paired: true})
	model, _ := filepath.Abs(bigModel)
	now := time.Unix(1000, 0)
	p := New(Options{Node: n,
		Self: func() (halda.Device, bool) { return cpu(selfRAM), true },
		Settings: func() config.Settings {
			return config.Settings{Model: model, ContextTokens: 512, MemoryBudget: budget}
		},
		Memory: func() (int64, int64) { return 8 * gib, 16 * gib },
		Now:    func() time.Time { return now },
	})
	return n, p
}

func layersOf(pl halda.Plan) map[deviceid.ID]int {
	out := map[deviceid.ID]int{}
	for _, a := range pl.Ring {
		out[a.ID] = a.W * pl.K
	}
	return out
}

// The device map's plan (the zero Request, after its background looks)
// and the plan the next chat makes for the same model and context are the
// same plan, and the chat's asks nothing and solves nothing more: its
// inputs did not change.
func TestMapAndChatPlanAlike(t *testing.T) {
	n, p := rig(600<<20, 0, 0)
	ctx := context.Background()
	for _, id := range []deviceid.ID{nB, nC} { // the map's peer cache looks
		if _, err := p.Look(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	shown, err := p.Next(Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(shown.Plan.Ring) < 2 {
		t.Fatalf("the map's plan keeps the model on %d device(s): %+v", len(shown.Plan.Ring), shown.Plan.Ring)
	}
	before := p.Counters()
	model, _ := filepath.Abs(bigModel)
	req := Request{Model: model, ContextTokens: 512}
	p.Refresh(ctx, req)
	chat, err := p.Next(req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shown.Plan, chat.Plan); diff != "" {
		t.Errorf("the chat's plan differs from the map's (-map +chat):\n%s", diff)
	}
	if got := p.Counters(); got != before {
		t.Errorf("the chat's planning did work: %+v after the map's %+v; want no look, solve or model read", got, before)
	}
	// The looks carried a hidden state of the model (2048 floats).
	for _, h := range n.asks {
		if h != 4*2048 {
			t.Errorf("a look timed pings of %d bytes, want a hidden state's %d", h, 4*2048)
		}
	}
	if _, ok := chat.Peers[nD]; ok {
		t.Errorf("an unpaired device is in the plan")
	}
	if _, ok := chat.Peers[nE]; ok {
		t.Errorf("a device with contribute off is in the plan")
	}
}

// A chat looks only at peers never looked at; Run keeps every candidate's
// look at most LookEvery old in the background, and a peer whose last look
// failed is left out of plans until one answers.
func TestLooksInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, p := rig(600<<20, 0, 0)
		p.o.Now = time.Now // the bubble's clock
		asks := func() int {
			n.mu.Lock()
			defer n.mu.Unlock()
			return len(n.asks)
		}
		ctx, cancel := context.WithCancel(context.Background())
		p.Refresh(ctx, Request{})
		if asks() != 2 {
			t.Fatalf("a chat's first refresh asked %d times, want both peers", asks())
		}
		p.Refresh(ctx, Request{})
		if asks() != 2 {
			t.Errorf("a chat's second refresh asked again (%d looks)", asks())
		}
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		time.Sleep(LookEvery - 2*time.Second)
		synctest.Wait()
		if asks() != 2 {
			t.Errorf("Run looked again before LookEvery (%d looks)", asks())
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if asks() != 4 {
			t.Errorf("after LookEvery: %d looks in all, want 4", asks())
		}
		if _, ok := p.LastLook(nB); !ok {
			t.Error("LastLook of a fresh look: none")
		}
		n.mu.Lock()
		n.down[nC] = true
		n.mu.Unlock()
		time.Sleep(LookEvery + time.Second)
		synctest.Wait()
		pl, err := p.Next(Request{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := pl.Peers[nC]; ok || p.Reachable() != 2 {
			t.Errorf("C did not answer its last look, yet it is planned with (reachable %d)", p.Reachable())
		}
		if _, ok := pl.Peers[nB]; !ok {
			t.Error("B answered, yet it is left out")
		}
		cancel()
		<-done
	})
}

// Each device's memory budget is its own setting, and every plan honours
// it: this device's from the settings, a peer's from its profile.
func TestBudgetHonoured(t *testing.T) {
	ctx := context.Background()
	plan := func(selfRAM, budget, peerBudget int64) halda.Plan {
		t.Helper()
		_, p := rig(selfRAM, budget, peerBudget)
		p.Refresh(ctx, Request{})
		pl, err := p.Next(Request{})
		if err != nil {
			t.Fatal(err)
		}
		return pl.Plan
	}
	free := plan(8*gib, 0, 0)
	t.Logf("no budgets: %v", layersOf(free))
	const budget = 256 << 20 // room for ~2 of the 16 layers of ~55 MB, beside KV and buffers
	tight := plan(8*gib, budget, 0)
	t.Logf("head budget 256 MiB: %v", layersOf(tight))
	for _, a := range tight.Ring {
		if a.ID == nHEAD && a.RAMBytes > budget {
			t.Errorf("the head is planned %d MiB of RAM, over its 256 MiB budget", a.RAMBytes>>20)
		}
	}
	if layersOf(tight)[nHEAD] >= layersOf(free)[nHEAD] {
		t.Errorf("the head's budget did not take layers from it: %d with, %d without", layersOf(tight)[nHEAD], layersOf(free)[nHEAD])
	}
	peers := plan(600<<20, 0, budget)
	t.Logf("peer budgets 256 MiB: %v", layersOf(peers))
	for _, a := range peers.Ring {
		if a.ID != nHEAD && a.RAMBytes > budget {
			t.Errorf("peer %s is planned %d MiB of RAM, over the 256 MiB budget it set", a.Device, a.RAMBytes>>20)
		}
	}
}

// A plan's problem is what the runner re-plans from after a loss (the one
// re-plan, ring.PlanWithout); the model header is read once however many
// plans are made.
func TestReplanFromProblemAndModelReadOnce(t *testing.T) {
	_, p := rig(600<<20, 0, 0)
	p.Refresh(context.Background(), Request{})
	pl, err := p.Next(Request{AllDevices: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Plan.Ring) != 3 {
		t.Fatalf("every device was asked for: ring %+v", pl.Plan.Ring)
	}
	_, after, err := ring.PlanWithout(pl.Problem, []deviceid.ID{nB}, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if got := layersOf(after); got[nB] != 0 || got[nHEAD]+got[nC] != 16 {
		t.Errorf("without B: %v, want 16 layers on HEAD and C", got)
	}
	if c := p.Counters(); c.ModelReads != 1 {
		t.Errorf("the model's header was read %d times, want once", c.ModelReads)
	}
}

// Install makes the next request of the same shape keep the plan: a tie
// does not move layers (the runner's kept job serves the next turn).
func TestInstallKeeps(t *testing.T) {
	_, p := rig(600<<20, 0, 0)
	p.Refresh(context.Background(), Request{})
	first, err := p.Next(Request{})
	if err != nil {
		t.Fatal(err)
	}
	p.Install(first)
	again, err := p.Next(Request{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(layersOf(first.Plan), layersOf(again.Plan)); diff != "" {
		t.Errorf("the installed plan was not kept (-first +again):\n%s", diff)
	}
}

func TestNoModel(t *testing.T) {
	p := New(Options{})
	if _, err := p.Next(Request{}); !errors.Is(err, ErrNoModel) {
		t.Errorf("no model selected: %v, want ErrNoModel", err)
	}
	_, err := p.Next(Request{Model: filepath.Join(t.TempDir(), "gone.gguf")})
	var me *ModelError
	if !errors.As(err, &me) {
		t.Errorf("a missing file: %v, want a ModelError", err)
	}
}

func TestQuantize(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{0, 0}, {900 << 10, 900 << 10}, {(64 << 20) + 12345, 64 << 20}, {(8 << 30) + (100 << 20), 8 << 30}, {(8 << 30) + (200 << 20), (8 << 30) + (128 << 20)},
	} {
		if got := quantize(tc.in); got != tc.want {
			t.Errorf("quantize(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// The link time planned with is the rolling median of the looks' one-way
// hidden-state times (half the round trip).
func TestLinkMedian(t *testing.T) {
	n, p := rig(600<<20, 0, 0)
	var got []float64
	for _, rtt := range []time.Duration{2, 10, 3, 2, 4} {
		n.mu.Lock()
		n.rtt[nB] = rtt * time.Millisecond // HiddenRTT is twice it
		n.mu.Unlock()
		if _, err := p.Look(context.Background(), nB); err != nil {
			t.Fatal(err)
		}
		pl, err := p.Next(Request{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pl.RawDevices[Name(nHEAD)].LinkSec[Name(nB)])
	}
	if diff := cmp.Diff([]float64{0.002, 0.006, 0.003, 0.0025, 0.003}, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("rolling medians (-want +got):\n%s", diff)
	}
}

// TestAdopt: the last plan stays for the same request shape unless a device
// of it is gone, the new one is a clear gain with both scored under this
// request's profiles (below KeepMargin on the same devices, τ when a device
// joins), or every device was asked for and the last lacks some.
func TestAdopt(t *testing.T) {
	// Three CPUs on 5 ms links; a 6-layer model of 1 GB, 1 GFLOP layers:
	// at speed 1 a layer takes 20 ms (compute + reading it).
	problem := func(speed map[string]float64, names ...string) halda.Problem {
		p := halda.Problem{Model: halda.Model{Name: "m", Layers: 6, Vocab: 1,
			LayerBytes: map[string]int64{"f16": 1e9}, LayerFlops: map[string]float64{"f16": 1e9}}}
		for _, n := range names {
			d := halda.Device{Name: n, OS: halda.Linux, RAMAvailable: 100e9, DiskSeqBytesPerSec: 1e9, DiskRandBytesPerSec: 1e9,
				CPUFlops: map[string]float64{"f16": 100e9 * speed[n]}, CPUReadBytesPerSec: 100e9 * speed[n], LinkSec: map[string]float64{}}
			for _, o := range names {
				if o != n {
					d.LinkSec[o] = 5e-3
				}
			}
			p.Devices = append(p.Devices, d)
		}
		return p
	}
	even := map[string]float64{"a": 1, "b": 1, "c": 1}
	solve := func(p halda.Problem) halda.Plan {
		t.Helper()
		pl, err := halda.Solve(p, lpsolve.Solver{})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	order := func(pl halda.Plan) []string {
		var out []string
		for _, a := range pl.Ring {
			out = append(out, a.Device)
		}
		return out
	}
	forced := func(p halda.Problem) halda.Problem { p.KeepAllDevices = true; return p }

	now := forced(problem(even, "a", "b", "c"))
	last := solve(now)
	// The same layers with the workers the other way round: a tie.
	swapped := last
	swapped.Ring = slices.Clone(last.Ring)
	swapped.Ring[1], swapped.Ring[2] = swapped.Ring[2], swapped.Ring[1]
	swapped, err := halda.Rescore(now, swapped)
	if err != nil {
		t.Fatal(err)
	}
	// The last plan as made when calibration had every device at half
	// speed: its prediction then is twice what it is now.
	stale := solve(forced(problem(map[string]float64{"a": 0.5, "b": 0.5, "c": 0.5}, "a", "b", "c")))
	// b at a quarter speed now: a plan giving it fewer layers is a clear gain.
	slowB := forced(problem(map[string]float64{"a": 1, "b": 0.25, "c": 1}, "a", "b", "c"))
	if gain := solve(slowB); cmp.Equal(order(gain), order(last)) && gain.Ring[1].W == last.Ring[1].W && gain.K == last.K {
		t.Fatalf("b at a quarter speed did not move layers: %+v", gain.Ring)
	}
	if stale.PredictedMs < 1.5*last.PredictedMs {
		t.Fatalf("the stale plan predicts %.1f ms, not well above the %.1f ms of now", stale.PredictedMs, last.PredictedMs)
	}
	// Calibration alone moved the profiles: the same devices, predicted
	// 10% or 30% faster than the last plan scored now.
	faster := func(f float64) halda.Plan { c := swapped; c.PredictedMs = f * last.PredictedMs; return c }
	// A device joins: the last plan on a and b, scored now, against a plan
	// of all three 10% faster (τ = 0.95 lets it in).
	two := problem(even, "a", "b", "c")
	lastTwo := solve(problem(even, "a", "b"))
	lastTwoNow, err := halda.Rescore(two, lastTwo)
	if err != nil {
		t.Fatal(err)
	}
	joined := solve(forced(two))
	joined.PredictedMs = 0.9 * lastTwoNow.PredictedMs
	// A worker's memory reading drops below what the last plan asks of it
	// (the ring's second device: a holds no layers in this problem): by 1%
	// (within MemorySlack) or by 20%.
	w := last.Ring[1]
	lower := func(f float64) halda.Problem {
		p := forced(problem(even, "a", "b", "c"))
		for i := range p.Devices {
			if p.Devices[i].Name == w.Device {
				p.Devices[i].RAMAvailable = int64(f * float64(w.RAMBytes))
			}
		}
		return p
	}
	if pl := solve(lower(0.99)); cmp.Equal(layersByName(pl), layersByName(last)) {
		t.Fatalf("1%% short of memory on %s, Halda plans the same layers %v; the case tests nothing", w.Device, layersByName(pl))
	}
	tests := []struct {
		name      string
		key       string
		p         halda.Problem
		last      halda.Plan
		cand      halda.Plan
		wantOrder []string // the ring of the plan returned
		wantMs    float64  // and its prediction
	}{
		{"a tie: keep the last", "k", now, last, swapped, order(last), last.PredictedMs},
		{"a stale prediction is scored again: keep the last", "k", now, stale, swapped, order(stale), last.PredictedMs},
		{"a clear gain: take the new", "k", slowB, last, solve(slowB), order(solve(slowB)), solve(slowB).PredictedMs},
		{"the same devices 10% faster: within calibration's error, keep the last", "k", now, last, faster(0.9), order(last), last.PredictedMs},
		{"the same devices just above KeepMargin: keep the last", "k", now, last, faster(KeepMargin + 1e-6), order(last), last.PredictedMs},
		{"the same devices 30% faster: take the new", "k", now, last, faster(0.7), order(swapped), 0.7 * last.PredictedMs},
		{"a device joins, 10% faster: take the new (τ)", "k", two, lastTwo, joined, order(joined), joined.PredictedMs},
		{"a worker's reading 1% short of the last plan: keep it", "k", lower(0.99), last, solve(lower(0.99)), order(last), mustRescore(t, withSlack(lower(0.99)), last).PredictedMs},
		{"a worker's reading 20% short: take the new", "k", lower(0.8), last, solve(lower(0.8)), order(solve(lower(0.8))), solve(lower(0.8)).PredictedMs},
		{"a device of the last is gone", "k", forced(problem(even, "a", "c")), last, solve(forced(problem(even, "a", "c"))), []string{"a", "c"}, solve(forced(problem(even, "a", "c"))).PredictedMs},
		{"another request shape", "other", now, last, swapped, order(swapped), swapped.PredictedMs},
		{"every device asked for, the last lacks some", "k", forced(problem(even, "a", "b", "c")), solve(problem(even, "a", "b")), swapped, order(swapped), swapped.PredictedMs},
	}
	// The plan kept at a reading 1% short keeps its cases: a device turned
	// into a paging case would release its windows' pages, a changed plan
	// for the runner's kept job.
	kept := Adopt(true, last, lower(0.99), solve(lower(0.99)))
	for i, a := range kept.Ring {
		if a.Case != last.Ring[i].Case {
			t.Errorf("kept plan: %s is case %s, was %s", a.Device, a.Case, last.Ring[i].Case)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Adopt(tt.key == "k", tt.last, tt.p, tt.cand)
			if diff := cmp.Diff(tt.wantOrder, order(got)); diff != "" {
				t.Errorf("ring of the plan returned (-want +got):\n%s", diff)
			}
			if math.Abs(got.PredictedMs-tt.wantMs) > 1e-9*tt.wantMs {
				t.Errorf("its prediction %.6f ms, want %.6f", got.PredictedMs, tt.wantMs)
			}
		})
	}
}

func layersByName(pl halda.Plan) map[string][]halda.LayerRange {
	out := map[string][]halda.LayerRange{}
	for _, a := range pl.Ring {
		out[a.Device] = a.Layers
	}
	return out
}

func mustRescore(t *testing.T, p halda.Problem, pl halda.Plan) halda.Plan {
	t.Helper()
	r, err := halda.Rescore(p, pl)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// This device's GPU is planned with its layers while its gpu setting is on
// (Halda's n for it alone: the single-device chat's and homering run
// --gpu-layers auto's), and not at all once it is off.
func TestGPUSetting(t *testing.T) {
	model, _ := filepath.Abs(bigModel)
	self := cpu(8 * gib)
	self.GPU, self.VRAMAvailable = halda.CUDA, 8*gib
	self.GPUFlops = map[string]float64{"q8_0": 20e12, "f32": 10e12, "f16": 20e12}
	self.GPUReadBytesPerSec, self.HostToGPUSec, self.GPUToHostSec = 400e9, 20e-6, 20e-6
	for _, tt := range []struct {
		gpu    string
		wantN0 bool
	}{{"", false}, {config.GPUOn, false}, {config.GPUOff, true}} {
		t.Run("gpu="+tt.gpu, func(t *testing.T) {
			p := New(Options{
				Self:     func() (halda.Device, bool) { return self, true },
				Settings: func() config.Settings { return config.Settings{Model: model, ContextTokens: 512, GPU: tt.gpu} },
				Memory:   func() (int64, int64) { return 8 * gib, 16 * gib },
			})
			pl, err := p.Next(Request{Alone: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := pl.Plan.Ring[0].N; (n == 0) != tt.wantN0 {
				t.Errorf("GPU layers %d with gpu=%q", n, tt.gpu)
			}
			if d := pl.Problem.Devices[0]; tt.wantN0 && (d.GPU != "" || d.VRAMAvailable != 0 || d.GPUFlops != nil) {
				t.Errorf("gpu off, yet the device is planned with a GPU: %+v", d)
			}
		})
	}
}

// A request's head reserve (a speculative draft's weights) is memory the
// plan does not count as available on this device, nor in its budget.
func TestHeadReserve(t *testing.T) {
	model, _ := filepath.Abs(bigModel)
	self := cpu(8 * gib)
	p := New(Options{
		Self: func() (halda.Device, bool) { return self, true },
		Settings: func() config.Settings {
			return config.Settings{Model: model, ContextTokens: 512, MemoryBudget: 4 * gib}
		},
		Memory: func() (int64, int64) { return 8 * gib, 16 * gib },
	})
	plain, err := p.Next(Request{Alone: true})
	if err != nil {
		t.Fatal(err)
	}
	reserved, err := p.Next(Request{Alone: true, HeadReserve: gib})
	if err != nil {
		t.Fatal(err)
	}
	a, b := plain.Problem.Devices[0], reserved.Problem.Devices[0]
	if a.RAMAvailable-b.RAMAvailable != gib || a.MemoryBudget-b.MemoryBudget != gib || plain.Key == reserved.Key {
		t.Errorf("available %d -> %d, budget %d -> %d, keys %q %q: want 1 GiB less and another key",
			a.RAMAvailable, b.RAMAvailable, a.MemoryBudget, b.MemoryBudget, plain.Key, reserved.Key)
	}
}

// A plan asks room for DefaultStreams conversations: every device's RAM
// row holds that many KV caches of the context, and a device whose budget
// holds one stream's caches but not four makes the plan admit fewer (or
// give it fewer layers); a chat on this device alone has one.
func TestStreamsCharged(t *testing.T) {
	ctx := context.Background()
	plan := func(selfRAM, budget, peerBudget int64, req Request) Plan {
		t.Helper()
		_, p := rig(selfRAM, budget, peerBudget)
		p.Refresh(ctx, req)
		pl, err := p.Next(req)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	ram := func(pl halda.Plan) (sum int64) {
		for _, a := range pl.Ring {
			sum += a.RAMBytes
		}
		return sum
	}
	four := plan(8*gib, 0, 0, Request{AllDevices: true})
	one := plan(8*gib, 0, 0, Request{AllDevices: true, Streams: 1})
	if four.Problem.Streams != DefaultStreams || four.Plan.Streams != DefaultStreams || one.Plan.Streams != 1 {
		t.Fatalf("streams asked/admitted: %d/%d by default, %d with Streams 1; want %d/%d and 1",
			four.Problem.Streams, four.Plan.Streams, one.Plan.Streams, DefaultStreams, DefaultStreams)
	}
	if four.Key == one.Key {
		t.Errorf("plans for 4 and 1 streams share the key %q: one would be kept for the other", four.Key)
	}
	// Every layer's cache of the context, three more times (the device
	// set and the buffers are the same; where the layers go does not
	// change the sum).
	m := four.Model
	kv := m.KVBytesPerToken * int64(m.ContextTokens) * int64(m.Layers)
	if kv <= 0 {
		t.Fatalf("the model's KV is %d bytes", kv)
	}
	if got := ram(four.Plan) - ram(one.Plan); got != 3*kv {
		t.Errorf("4 streams ask %d bytes more RAM than 1, want 3 × %d (every layer's cache of %d tokens)", got, kv, m.ContextTokens)
	}
	t.Logf("KV %d MiB a stream; RAM %d MiB for 1 stream, %d MiB for 4", kv>>20, ram(one.Plan)>>20, ram(four.Plan)>>20)
	if alone := plan(8*gib, 0, 0, Request{Alone: true}); alone.Plan.Streams != 1 {
		t.Errorf("a plan for this device alone admits %d streams, want 1", alone.Plan.Streams)
	}

	// A head whose budget holds its layers with one stream's caches (and
	// half a stream more), not four streams': it gets fewer layers (the
	// peers are as fast, so moving layers costs nothing) or the plan
	// admits fewer streams, and it is not planned past its budget.
	var head halda.Assignment
	for _, a := range one.Plan.Ring {
		if a.ID == nHEAD {
			head = a
		}
	}
	perLayer := m.KVBytesPerToken * int64(m.ContextTokens)
	budget := head.RAMBytes + int64(head.W*one.Plan.K)*perLayer/2
	tight := plan(8*gib, budget, 0, Request{AllDevices: true})
	t.Logf("head budget %d MiB: %v, %d streams (one stream: %v)", budget>>20, layersOf(tight.Plan), tight.Plan.Streams, layersOf(one.Plan))
	if tight.Plan.Streams == DefaultStreams && layersOf(tight.Plan)[nHEAD] >= layersOf(one.Plan)[nHEAD] {
		t.Errorf("a head with room for 1.5 streams kept %d layers and %d streams", layersOf(tight.Plan)[nHEAD], tight.Plan.Streams)
	}
	for _, a := range tight.Plan.Ring {
		if a.ID == nHEAD && a.RAMBytes > budget {
			t.Errorf("the head is planned %d MiB of RAM, over its %d MiB budget", a.RAMBytes>>20, budget>>20)
		}
	}
}
