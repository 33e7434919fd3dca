// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
	"homering/discovery/identity"
	"homering/engine/ggml"
	"homering/engine/profile"
	"homering/engine/profile/modelprof"
	"homering/engine/ring"
	"homering/engine/ring/driver"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/halda"
	"homering/halda/lpsolve"
)

// The ring across real processes: runner children on loopback, each with
// its own identity, pinned to each other, real mutual TLS.

// smallModel is a generated llama (4 layers, quantized: its logits do not
// depend on the batch size, so an output head alone stays exact).
const smallModel = "../../testdata/models/llama-Q8_0.gguf"

// prefillChunk is the most tokens the head's ring job sends round in one
// pass (engine/ring/job: a window evaluates at most ggml.MaxBatch).
const prefillChunk = ggml.MaxBatch

type device struct {
	dir   string // identity directory
	id    string
	did   identity.DeviceID // id, typed
	cache string
	sup   *Supervisor
	addr  string // ring address, workers
}

func newDevice(t *testing.T) *device {
	t.Helper()
	return newDeviceWith(t, supervisorOptions(t))
}

// newDeviceWith is newDevice with a supervisor of options o (a
// benchmark's log and backoff); Command is always childCommand.
func newDeviceWith(tb testing.TB, o Options) *device {
	tb.Helper()
	d := &device{dir: tb.TempDir(), cache: tb.TempDir()}
	ident, err := identity.LoadOrCreate(d.dir, time.Now(), crand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	d.id, d.did = ident.ID.String(), ident.ID
	o.Command = childCommand
	d.sup = New(o)
	tb.Cleanup(func() { _ = d.sup.Close() })
	return d
}

// serveRing makes w serve the ring for the others.
func serveRing(t testing.TB, w *device, others ...*device) {
	t.Helper()
	var allowed []identity.DeviceID
	for _, o := range others {
		allowed = append(allowed, o.did)
	}
	addr, err := w.sup.ServeRing(context.Background(), ServeParams{Identity: w.dir, Allowed: allowed, CacheDir: w.cache, Listen: "127.0.0.1:0", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.addr = addr
}

func modelShape(t testing.TB, path string) (layers, nEmbd int) {
	t.Helper()
	m, err := ggml.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return m.Info().NLayer, m.Info().NEmbd
}

// evenPlan splits layers evenly over the devices' k windows each.
func evenPlan(id uint64, layers, nEmbd, k int, devs ...*device) *wire.Plan {
	p := &wire.Plan{ID: id, K: k, Layers: layers, NEmbd: nEmbd, DType: wire.F32, Devices: make([]wire.Device, len(devs))}
	for i, d := range devs {
		p.Devices[i].ID = d.did
	}
	n, start := len(devs)*k, 0
	for w := range n {
		end := (w + 1) * layers / n
		p.Devices[w%len(devs)].Windows = append(p.Devices[w%len(devs)].Windows, wire.Range{Start: start, End: end})
		start = end
	}
	return p
}

func ringParams(plan *wire.Plan, head *device, workers ...*device) RingParams {
	// A long tick: a loaded CI machine must not look like a dead one. A
	// killed process is noticed at once anyway (its links close).
	rp := RingParams{Plan: plan, Identity: head.dir, TickMS: 1000}
	for _, w := range workers {
		rp.Peers = append(rp.Peers, RingPeer{ID: w.did, Addr: w.addr})
	}
	return rp
}

// reference is the single-device engine's greedy reply.
func reference(t *testing.T, s *Supervisor, lp LoadParams, g GenerateParams) []int32 {
	t.Helper()
	var out []int32
	if _, err := s.Generate(context.Background(), lp, g, func(tk Token) error { out = append(out, tk.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// withProblem gives rp the Halda problem the agent would send with it:
// equal unmeasured devices (the head first), every one kept, so that the
// child's re-plan after a loss spreads the layers over every device left.
func withProblem(t testing.TB, rp RingParams, model string, head *device, workers ...*device) RingParams {
	t.Helper()
	m, err := modelprof.FromGGUF(model, 512)
	if err != nil {
		t.Fatal(err)
	}
	q := &halda.Problem{Model: m, DefaultLinkSec: 1e-3, KeepAllDevices: true, HeadHoldsLayers: true}
	for _, d := range append([]*device{head}, workers...) {
		dev := profile.Unmeasured(d.id, 8<<30, 16<<30)
		dev.ID = d.did // as app/planner names a device: its ID and, for halda, its text
		q.Devices = append(q.Devices, dev)
	}
	rp.Problem = q
	return rp
}

func ringTokens(t *testing.T, head *device, lp LoadParams, rp RingParams, g GenerateParams, onToken func(n int)) ([]int32, Stats, error) {
	t.Helper()
	var out []int32
	st, err := head.sup.RingGenerate(context.Background(), lp, rp, g, func(tk Token) error {
		out = append(out, tk.ID)
		if onToken != nil {
			onToken(len(out))
		}
		return nil
	})
	return out, st, err
}

// Three processes (a head, two workers) give the single-device engine's
// greedy tokens, for stories260K and a generated model, k = 1 and k = 2.
// The workers serve one job after the other.
func TestRingEqualsSingleDevice(t *testing.T) {
	head, w1, w2 := newDevice(t), newDevice(t), newDevice(t)
	// As in a home: each worker is paired with the head only; the head
	// vouches for the other workers of its job.
	serveRing(t, w1, head)
	serveRing(t, w2, head)
	longPrompt := strings.Repeat("Once upon a time there was a little dog. ", 60)
	coldCaches := true
	for _, tt := range []struct {
		name    string
		model   string
		k       int
		workers []*device
		prompt  string
		temp    float32 // 0: greedy
	}{
		{"stories260K k=1 three devices", stories260K, 1, []*device{w1, w2}, "", 0},
		{"generated k=1 three devices", smallModel, 1, []*device{w1, w2}, "", 0},
		{"generated k=2 two devices", smallModel, 2, []*device{w1}, "", 0},
		// More than 512 prompt tokens: the prefill goes round in two passes,
		// each pipelined in micro-batches (ring.MicroRows).
		{"generated long prompt", smallModel, 1, []*device{w1, w2}, longPrompt, 0},
		{"generated long prompt k=2", smallModel, 2, []*device{w1}, longPrompt, 0},
		// Sampling on the head's logits draws what the single device draws.
		{"generated temperature 0.8", smallModel, 1, []*device{w1, w2}, "", 0.8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lp := LoadParams{Model: tt.model, NCtx: 1024, Threads: 1}
			g := *greedy(24)
			g.Prompt = "Once upon a time"
			if tt.prompt != "" {
				g.Prompt = tt.prompt
			}
			g.Temperature, g.Seed = tt.temp, 7
			var want []int32
			single, err := head.sup.Generate(context.Background(), lp, g, func(tk Token) error { want = append(want, tk.ID); return nil })
			if err != nil {
				t.Fatal(err)
			}
			layers, nEmbd := modelShape(t, tt.model)
			devs := append([]*device{head}, tt.workers...)
			rp := ringParams(evenPlan(1, layers, nEmbd, tt.k, devs...), head, tt.workers...)
			sent := map[deviceid.ID]Progress{}
			rp.OnProgress = func(p Progress) {
				if p.Done > p.Total || p.Done < sent[p.Device].Done {
					t.Errorf("progress %+v after %+v", p, sent[p.Device])
				}
				sent[p.Device] = p
			}
			// While the reply streams, each worker's supervisor says whose
			// job it serves and with which layers (EvJob).
			serving := map[deviceid.ID]Serving{}
			got, st, err := ringTokens(t, head, lp, rp, g, func(int) {
				for _, w := range tt.workers {
					if j := w.sup.Serving(); j != nil && len(j.Windows) > 0 {
						serving[w.did] = *j
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tokens (-single device +ring)\n%s", diff)
			}
			for i, w := range tt.workers {
				j, ok := serving[w.did]
				if d := rp.Plan.Devices[i+1]; !ok || j.Head != head.did || !slices.Equal(j.Windows, d.Windows) || j.AnonBytes <= 0 || j.Since.IsZero() {
					t.Errorf("worker %s serving %+v (seen %v) during the reply, want head %s, windows %v and its memory", w.id, j, ok, head.id, d.Windows)
				}
			}
			// The job ends with the request (no KeepMS): the workers say so.
			for _, w := range tt.workers {
				deadline := time.Now().Add(5 * time.Second)
				for w.sup.Serving() != nil && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if j := w.sup.Serving(); j != nil {
					t.Errorf("worker %s still serving %+v after the job ended", w.id, j)
				}
			}
			if coldCaches {
				// The first job ships every worker all of its windows' weights,
				// and the head reports it to the end.
				for _, w := range tt.workers {
					if p := sent[w.did]; p.Total == 0 || p.Done != p.Total {
						t.Errorf("weights sent to %s: %+v, want all of them", w.id, p)
					}
				}
				coldCaches = false
			}
			if len(st.Devices) != len(devs) || st.Replans != 0 {
				t.Fatalf("stats %+v: want %d devices and no replan", st, len(devs))
			}
			for i, d := range st.Devices {
				if d.ID != devs[i].did || d.ComputeMS <= 0 {
					t.Errorf("device %d stats %+v: want %s with its compute time", i, d, devs[i].id)
				}
				if i > 0 && d.SliceBytes == 0 {
					t.Errorf("worker %d reported no slice: %+v", i, d)
				}
			}
			if tt.prompt != "" && st.PromptTokens <= prefillChunk {
				t.Errorf("the long prompt has %d tokens, want more than %d", st.PromptTokens, prefillChunk)
			}
			if tt.prompt != "" {
				// Pipelined: every device computed each micro-batch of
				// each of its k windows (the head its output head once more).
				mb := ring.MicroRows(prefillChunk, len(devs), false) // 64 on three devices, 128 on two
				micros := (prefillChunk+mb-1)/mb + (st.PromptTokens-prefillChunk+mb-1)/mb
				if tr := st.Trace; tr == nil || tr.MicroRows != mb || tr.PromptPasses != 2 || tr.PromptMS <= 0 {
					t.Errorf("trace %+v: want 2 prompt passes in micro-batches of %d", tr, mb)
				}
				for i, d := range st.Devices {
					if d.Prompts < micros*tt.k || d.PromptRows != st.PromptTokens || d.PromptMS <= 0 {
						t.Errorf("device %d computed %d prompt batches of %d rows in %.1f ms, want %d of the %d prompt rows", i, d.Prompts, d.PromptRows, d.PromptMS, micros*tt.k, st.PromptTokens)
					}
				}
			}
			// Workers run at lowered priority, ggml's threads made by the
			// job included; only a ring link's reader, which answers pings,
			// is raised back (engine/ring/driver's pingThread: as root
			// here) while its link lives, on a thread named for it.
			for _, w := range tt.workers {
				for _, th := range threadNices(t, w.sup.PID()) {
					if th.nice != workerNice && th.name != driver.PingThreadName {
						t.Fatalf("thread %q of worker %s runs at nice %d, want %d", th.name, w.id, th.nice, workerNice)
					}
				}
			}
			t.Logf("%d prompt + %d tokens; decode %.0f tokens/s on the ring, %.0f on one device; devices %+v", st.PromptTokens, len(got),
				float64(st.DecodeTokens)/st.DecodeMS*1000, float64(single.DecodeTokens)/single.DecodeMS*1000, st.Devices)
		})
	}
}

// threeRing is a head and two workers serving it, the generation the
// fault tests run (200 greedy tokens of smallModel), its single-device
// reply, and an even k=1 plan over the three.
type threeRing struct {
	head, w1, w2  *device
	lp            LoadParams
	g             GenerateParams
	want          []int32
	layers, nEmbd int
	rp            RingParams
}

func newThreeRing(t *testing.T) threeRing {
	t.Helper()
	r := threeRing{head: newDevice(t), w1: newDevice(t), w2: newDevice(t)}
	serveRing(t, r.w1, r.head, r.w2)
	serveRing(t, r.w2, r.head, r.w1)
	r.lp = LoadParams{Model: smallModel, NCtx: 512, Threads: 1}
	r.g = *greedy(200)
	r.g.Prompt = "Once upon a time"
	r.want = reference(t, r.head.sup, r.lp, r.g)
	r.layers, r.nEmbd = modelShape(t, smallModel)
	r.rp = withProblem(t, ringParams(evenPlan(1, r.layers, r.nEmbd, 1, r.head, r.w1, r.w2), r.head, r.w1, r.w2), smallModel, r.head, r.w1, r.w2)
	return r
}

// A worker killed mid-generation: the head asks for a plan without it,
// re-prefills on the two devices left and finishes a reply equal to the
// unfaulted one.
func TestRingWorkerKilled(t *testing.T) {
	r := newThreeRing(t)
	head, w1, w2, lp, g, want, rp := r.head, r.w1, r.w2, r.lp, r.g, r.want, r.rp
	victim := w1.sup.PID()
	if victim <= 0 {
		t.Fatal("worker 1 has no runner process")
	}
	var killed, resumed time.Time
	got, st, err := ringTokens(t, head, lp, rp, g, func(n int) {
		switch {
		case n == 3:
			// Freeze it first, so that the reply cannot end before the
			// kill lands, then kill it.
			_ = syscall.Kill(victim, syscall.SIGSTOP)
			_ = syscall.Kill(victim, syscall.SIGKILL)
			killed = time.Now()
		case n == 4:
			resumed = time.Now()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-unfaulted +faulted)\n%s", diff)
	}
	if st.Replans != 1 || st.LossToTokenMS <= 0 || len(st.Devices) != 2 {
		t.Fatalf("stats %+v: want one replan, a loss-to-token time and two devices", st)
	}
	// w2 keeps its layers (2-4) in the new plan: its slice is reused.
	if d := st.Devices[1]; d.ID != w2.did || d.Fetched != 0 || d.SliceBytes == 0 {
		t.Errorf("survivor stats %+v: want w2 with its cached slice, nothing fetched", d)
	}
	t.Logf("kill to next token: %v (head: loss noticed to next token %.1f ms)", resumed.Sub(killed).Round(time.Millisecond), st.LossToTokenMS)
}

// The only worker killed: the head finishes the reply alone.
func TestRingHeadFinishesAlone(t *testing.T) {
	head, w1 := newDevice(t), newDevice(t)
	serveRing(t, w1, head)
	lp := LoadParams{Model: smallModel, NCtx: 512, Threads: 1}
	g := *greedy(100)
	g.Prompt = "Once upon a time"
	want := reference(t, head.sup, lp, g)
	layers, nEmbd := modelShape(t, smallModel)
	rp := withProblem(t, ringParams(evenPlan(1, layers, nEmbd, 2, head, w1), head, w1), smallModel, head, w1)
	victim := w1.sup.PID()
	if victim <= 0 {
		t.Fatal("the worker has no runner process")
	}
	got, st, err := ringTokens(t, head, lp, rp, g, func(n int) {
		if n == 3 {
			_ = syscall.Kill(victim, syscall.SIGSTOP)
			_ = syscall.Kill(victim, syscall.SIGKILL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-unfaulted +faulted)\n%s", diff)
	}
	if st.Replans != 1 || len(st.Devices) != 1 {
		t.Errorf("stats %+v: want one replan and the head alone", st)
	}
}

// fakeWorker is a worker that answers the head's job start and then sends
// a frame that does not decode.
func fakeWorker(t *testing.T, ctx context.Context, head string) (id, addr string) {
	t.Helper()
	dir := t.TempDir()
	ident, err := identity.LoadOrCreate(dir, time.Now(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ep := transport.New(transport.Config{
		Identity: ident,
		Hello: func() transport.Hello {
			return transport.Hello{ProtoMin: wire.ProtoMin, ProtoMax: wire.ProtoMax, App: "fake"}
		},
		Authorize: func(id identity.DeviceID) transport.Decision {
			if id.String() == head {
				return transport.AllowLink
			}
			return transport.Refuse
		},
		Log: testLogger(t),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ep.Serve(ctx, ln, malformedWorker) }() // ends with ctx
	return ident.ID.String(), ln.Addr().String()
}

// malformedWorker answers a job start and then a plan with a malformed frame.
func malformedWorker(ctx context.Context, c *transport.Conn) {
	if c.Hello.Purpose != transport.PurposeLink {
		return // the slice connection: never used
	}
	defer c.Close()
	for {
		f, err := c.Recv()
		if err != nil {
			return
		}
		m, err := wire.Decode(wire.Type(f.Type), f.Payload)
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *wire.JobStart:
			typ, p, _ := wire.Encode(&wire.JobAck{Job: m.Job})
			_ = c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
		case *wire.Plan:
			_ = c.Send(transport.Frame{Type: transport.MsgType(wire.TypeActivation), Payload: []byte{1, 2, 3}})
		}
	}
}

// A worker that sends a malformed frame is cut off and treated as lost; the
// head re-plans without it and the reply is the unfaulted one.
func TestRingMalformedFrameWorkerLost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	head, w1 := newDevice(t), newDevice(t)
	bad := &device{}
	bad.id, bad.addr = fakeWorker(t, ctx, head.id)
	bad.did, _ = identity.ParseDeviceID(bad.id)
	serveRing(t, w1, head, bad)
	lp := LoadParams{Model: stories260K, NCtx: 256, Threads: 1}
	g := *greedy(16)
	g.Prompt = "Once upon a time"
	want := reference(t, head.sup, lp, g)
	layers, nEmbd := modelShape(t, stories260K)
	rp := withProblem(t, ringParams(evenPlan(1, layers, nEmbd, 1, head, w1, bad), head, w1, bad), stories260K, head, w1, bad)
	// A slower head: the re-plan gives w1 more than the last layer.
	flops := map[string]float64{}
	for k, v := range rp.Problem.Devices[0].CPUFlops {
		flops[k] = v / 2
	}
	rp.Problem.Devices[0].CPUFlops = flops
	// w1's first window is the first layer of the one the child's re-plan
	// gives it (ring.PlanWithout, worked out here as the child will): it
	// keeps that layer and fetches the rest.
	_, after, err := ring.PlanWithout(*rp.Problem, []deviceid.ID{bad.did}, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Ring) != 2 || after.K != 1 || len(after.Ring[1].Layers) != 1 {
		t.Fatalf("the re-plan without the bad worker is %+v: want the head, then w1", after.Ring)
	}
	s, e := after.Ring[1].Layers[0].Start, after.Ring[1].Layers[0].End
	if s < 1 || e-s < 2 || s+1 >= layers {
		t.Fatalf("the re-plan without the bad worker gives w1 layers %d-%d: want two or more, not the first", s, e)
	}
	rp.Plan.Devices[0].Windows = []wire.Range{{Start: 0, End: s}}
	rp.Plan.Devices[1].Windows = []wire.Range{{Start: s, End: s + 1}}
	rp.Plan.Devices[2].Windows = []wire.Range{{Start: s + 1, End: layers}}
	var files []string
	var anon int
	got, st, err := ringTokens(t, head, lp, rp, g, func(n int) {
		if n == 2 { // on the new plan: the bad worker is never Ready
			files = mappedFiles(t, w1.sup.PID(), w1.cache)
			_, anon = sliceMemory(t, w1.sup.PID(), w1.cache)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-unfaulted +faulted)\n%s", diff)
	}
	if st.Replans != 1 || len(st.Devices) != 2 || st.Devices[1].ID != w1.did {
		t.Fatalf("stats %+v: want one replan, the bad worker gone", st)
	}
	// w1 went from layer s to layers s..e: layer s stays in its cached
	// slice, the others come from the head, into a second slice; its
	// window runs over both mappings, file pages only.
	if d := st.Devices[1]; d.Fetched <= 0 || d.Fetched >= d.SliceBytes {
		t.Errorf("after the re-plan w1 fetched %d of its %d slice bytes, want only the layers it lacked", d.Fetched, d.SliceBytes)
	}
	if len(files) != 2 || anon != 0 {
		t.Errorf("after the re-plan w1 maps %q (%d kB anonymous), want its two slices as file pages", files, anon)
	}
}

// mappedFiles lists the files under dir that process pid maps.
func mappedFiles(t *testing.T, pid int, dir string) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatalf("read the maps of worker %d: %v", pid, err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 6 && strings.HasPrefix(f[5], dir) && !slices.Contains(out, f[5]) {
			out = append(out, f[5])
		}
	}
	return out
}

// threadNice is one thread's name and nice value.
type threadNice struct {
	name string
	nice int
}

// threadNices returns the name and nice value of every thread of process pid.
func threadNices(t *testing.T, pid int) []threadNice {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []threadNice
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		name := string(b[strings.IndexByte(string(b), '(')+1 : strings.LastIndexByte(string(b), ')')])
		// Fields after the command name (which may hold spaces): state is
		// field 3, nice field 19.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		n, err := strconv.Atoi(f[19-3])
		if err != nil {
			t.Fatalf("stat of thread %s: %v", task.Name(), err)
		}
		out = append(out, threadNice{name, n})
	}
	return out
}

// sliceMemory sums, over the mappings of files under dir in process pid,
// the resident kB and the anonymous kB (private copies of file pages).
func sliceMemory(t *testing.T, pid int, dir string) (rss, anon int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatalf("read the smaps of worker %d: %v", pid, err)
	}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			in = len(f) >= 6 && strings.HasPrefix(f[5], dir)
		case in && len(f) >= 2 && (f[0] == "Rss:" || f[0] == "Anonymous:"):
			n, _ := strconv.Atoi(f[1])
			if f[0] == "Rss:" {
				rss += n
			} else {
				anon += n
			}
		}
	}
	return rss, anon
}

// mapsPath reports whether process pid maps a file under dir.
func mapsPath(t *testing.T, pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatalf("read the maps of worker %d: %v", pid, err)
	}
	return strings.Contains(string(b), dir)
}

// Killing the head ends the job on the workers within seconds: their
// windows close and their slices are unmapped. They keep serving: the next
// job (a restarted head) finds the slices in their caches and fetches
// nothing.
func TestRingHeadKilled(t *testing.T) {
	r := newThreeRing(t)
	head, w1, w2, lp, g, want, rp := r.head, r.w1, r.w2, r.lp, r.g, r.want, r.rp
	headPID := head.sup.PID()
	if headPID <= 0 {
		t.Fatal("the head has no runner process")
	}
	workers := []*device{w1, w2}
	var mapped bool
	var killed time.Time
	_, _, err := ringTokens(t, head, lp, rp, g, func(n int) {
		if n == 3 {
			mapped = mapsPath(t, w1.sup.PID(), w1.cache) && mapsPath(t, w2.sup.PID(), w2.cache)
			// The weights are the slice's pages, never private copies.
			for _, w := range workers {
				if rss, anon := sliceMemory(t, w.sup.PID(), w.cache); rss == 0 || anon != 0 {
					t.Errorf("worker %s holds its slice as %d kB resident, %d kB of them anonymous; want file pages only", w.id, rss, anon)
				}
			}
			_ = syscall.Kill(headPID, syscall.SIGSTOP)
			_ = syscall.Kill(headPID, syscall.SIGKILL)
			killed = time.Now()
		}
	})
	var died *DiedError
	if !errors.As(err, &died) {
		t.Fatalf("ring generation with the head killed: %v, want a DiedError", err)
	}
	if !mapped {
		t.Fatal("the workers did not map their slices during the job")
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range workers {
		for mapsPath(t, w.sup.PID(), w.cache) {
			if time.Now().After(deadline) {
				t.Fatalf("worker %s still maps its slice 10 s after the head died", w.id)
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline
		}
	}
	t.Logf("workers freed their windows %v after the head was killed", time.Since(killed).Round(time.Millisecond))

	// Warm restart: a new head process, the same job.
	got, st, err := ringTokens(t, head, lp, rp, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens after the restart (-single device +ring)\n%s", diff)
	}
	for _, d := range st.Devices[1:] {
		if d.Fetched != 0 || d.SliceBytes == 0 {
			t.Errorf("worker %s fetched %d of %d slice bytes on a warm restart, want 0", d.ID, d.Fetched, d.SliceBytes)
		}
	}
}

// A device busy as a head (a chat of its own holds its child) answers
// another head's job ask at once: with the address it already serves at,
// or with ErrBusy, never after the ask's timeout.
func TestServeRingWhileBusy(t *testing.T) {
	w, h, h2 := newDevice(t), newDevice(t), newDevice(t)
	serveRing(t, w, h)
	ctx := context.Background()
	if err := w.sup.lock(ctx); err != nil { // the chat of its own
		t.Fatal(err)
	}
	same := ServeParams{Identity: w.dir, Allowed: []identity.DeviceID{h.did}, CacheDir: w.cache, Listen: "127.0.0.1:0", Threads: 1}
	start := time.Now()
	addr, err := w.sup.ServeRing(ctx, same)
	if err != nil || addr != w.addr {
		t.Errorf("while busy, serving already: %q, %v; want %q at once", addr, err, w.addr)
	}
	other := same
	other.Allowed = []identity.DeviceID{h.did, h2.did}
	if _, err := w.sup.ServeRing(ctx, other); !errors.Is(err, ErrBusy) {
		t.Errorf("while busy, not serving this: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the answers took %v; want about %v each", d, busyWait)
	}
	w.sup.unlock()
	if _, err := w.sup.ServeRing(ctx, other); err != nil {
		t.Errorf("once idle: %v, want it to serve", err)
	}
}
