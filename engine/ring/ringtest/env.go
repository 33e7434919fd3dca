package ringtest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"homering/discovery/deviceid"
	"homering/engine/ring"
	"homering/engine/ring/wire"
)

// Env is an in-memory ring: sessions of several devices joined by perfect,
// ordered links, a fake compute and a tick counter. It prints every action
// the sessions take, one per line, for the scripts in engine/ring/testdata.
//
// The fake compute is order-sensitive so that a wrong window order shows in
// the token: embedding puts token+j in column j, each layer l maps every
// value h to (31h + l + 1) mod 65521, and the output token is the last row's
// column 0 mod 1000. Reference computes the same over all layers on one
// device.
type Env struct {
	TickMs int
	devs   map[string]*dev
	head   string
	layers int
	nEmbd  int
	queue  []delivery
	out    strings.Builder
	tokens map[int][]int32 // per stream, of its pass in flight on the head, for the reference

	dupNext  map[[2]string]bool   // deliver the next activation on a link twice
	capture  map[[2]string]bool   // keep a copy of the next activation on a link
	hold     map[[2]string]string // hold back the next frame (of a kind, "" any) on a link until replay
	captured []delivery
}

type dev struct {
	id       string
	s        *ring.Session
	slow     int    // ticks a Compute takes
	frozen   bool   // its engine never finishes a Compute; its link still answers pings
	work     uint64 // its sign of engine work in its pongs (progress): 0 none sent, else 1 + ticks spent computing
	gapMs    int    // its ticks come this long after the previous one (0: on time)
	gone     bool
	stalled  int        // ticks it stays stopped (stall)
	missed   int        // ticks it missed while stopped
	backlog  []delivery // what reached it while stopped
	rttMs    int
	failPrep string // answer Prepare with this error text
	pending  []pendingCompute
}

type pendingCompute struct {
	left int
	c    ring.Compute
}

type delivery struct {
	to string
	ev ring.Event
}

// NewEnv returns an empty environment.
func NewEnv() *Env {
	return &Env{TickMs: 100, devs: map[string]*dev{}, dupNext: map[[2]string]bool{}, capture: map[[2]string]bool{}, hold: map[[2]string]string{}, tokens: map[int][]int32{}}
}

// Handle runs one script command and returns its output.
func (e *Env) Handle(c Cmd) string {
	e.out.Reset()
	if err := e.handle(c); err != nil {
		return "error: " + e.names().Replace(err.Error())
	}
	if e.out.Len() == 0 {
		return "ok"
	}
	return e.names().Replace(e.out.String())
}

func (e *Env) handle(c Cmd) error {
	switch c.Name {
	case "devices":
		for _, id := range c.Args {
			if strings.Contains(id, "=") {
				continue
			}
			e.addDevice(id)
		}
		if v, ok := c.Arg("tick"); ok {
			e.TickMs = atoi(v)
		}
	case "plan":
		return e.plan(c)
	case "token":
		if len(c.Args) == 0 {
			return fmt.Errorf("token needs at least one token id")
		}
		var toks []int32
		pos, batch, verify, stream := 0, 0, false, 0
		for _, a := range c.Args {
			if a == "verify" {
				verify = true
				continue
			}
			if v, ok := strings.CutPrefix(a, "pos="); ok {
				pos = atoi(v)
				continue
			}
			if v, ok := strings.CutPrefix(a, "batch="); ok {
				batch = atoi(v)
				continue
			}
			if v, ok := strings.CutPrefix(a, "stream="); ok {
				stream = atoi(v)
				continue
			}
			toks = append(toks, int32(atoi(a)))
		}
		if h := e.devs[e.head]; h == nil || !slices.Contains(h.s.InFlight(), stream) {
			e.tokens[stream] = toks // a refused pass leaves the one in flight's reference
		}
		e.step(e.head, ring.StartToken{Tokens: toks, Pos: pos, Batch: batch, Verify: verify, Stream: stream})
	case "tick":
		n := 1
		if len(c.Args) > 0 && !strings.Contains(c.Args[0], "=") {
			n = atoi(c.Args[0])
		}
		late, _ := c.Arg("late")
		// gap=DEV:MS,…: those devices' ticks come MS after the previous one.
		if g, ok := c.Arg("gap"); ok {
			for _, dg := range strings.Split(g, ",") {
				id, ms, _ := strings.Cut(dg, ":")
				e.devs[id].gapMs = atoi(ms)
			}
			defer func() {
				for _, d := range e.devs {
					d.gapMs = 0
				}
			}()
		}
		for range n {
			e.tick(strings.Split(late, ","))
		}
	case "stall":
		for _, a := range c.Args {
			id, v, _ := strings.Cut(a, "=")
			e.devs[id].stalled = atoi(v)
		}
	case "progress":
		// progress DEV…: its pongs carry its sign of engine work, which
		// grows by one each tick it computes (a slow Compute), not while
		// its engine is frozen.
		for _, id := range c.Args {
			e.devs[id].work = max(e.devs[id].work, 1)
		}
	case "freeze":
		// freeze DEV…: a worker whose engine hangs while its pinger runs.
		for _, id := range c.Args {
			e.devs[id].frozen = true
		}
	case "expect":
		// expect HEAD PEER decode=MS row=MS: what the head is told of a
		// worker's window times.
		d, ok := e.devs[c.Args[0]]
		if !ok || len(c.Args) < 2 {
			return fmt.Errorf("expect: give a head and a peer")
		}
		var x ring.Expectation
		if v, ok := c.Arg("decode"); ok {
			x.DecodeMs = atoi(v)
		}
		if v, ok := c.Arg("row"); ok {
			x.RowMs = atoi(v)
		}
		d.s.Expect(ID(c.Args[1]), x)
	case "stalls":
		for _, id := range e.ids() {
			for _, o := range e.ids() {
				if n, limit, ok := e.devs[id].s.StallOf(ID(o)); ok {
					fmt.Fprintf(&e.out, "%s: %s holds an activation %d of %d ticks\n", id, o, n, limit)
				}
			}
		}
	case "slow":
		for _, a := range c.Args {
			id, v, _ := strings.Cut(a, "=")
			e.devs[id].slow = atoi(v)
		}
	case "seed":
		// seed DEV PEER=TICKS…: what earlier jobs saw PEER's silences last.
		d, ok := e.devs[c.Args[0]]
		if !ok {
			return fmt.Errorf("seed: no device %q", c.Args[0])
		}
		for _, a := range c.Args[1:] {
			id, v, _ := strings.Cut(a, "=")
			d.s.Seed(ID(id), atoi(v))
		}
	case "gaps":
		for _, id := range e.ids() {
			gs := e.devs[id].s.Gaps()
			for _, o := range slices.SortedFunc(maps.Keys(gs), deviceid.ID.Compare) {
				for _, g := range gs[o] {
					fmt.Fprintf(&e.out, "%s: %s ended a silence of %d ticks %d ticks ago\n", id, o, g.Ticks, g.Age)
				}
			}
		}
	case "rtt":
		for _, a := range c.Args {
			id, v, _ := strings.Cut(a, "=")
			e.devs[id].rttMs = atoi(v)
		}
	case "fail-prepare":
		e.devs[c.Args[0]].failPrep = strings.Join(c.Args[1:], " ")
	case "drop":
		d := e.devs[c.Args[0]]
		d.gone = true
		d.pending = nil
		if slices.Contains(c.Args[1:], "close") {
			for _, o := range e.live() {
				e.queue = append(e.queue, delivery{o, ring.PeerLost{ID: ID(d.id), Reason: "connection reset"}})
			}
		}
		e.run()
	case "dup":
		e.dupNext[link(c.Args[0])] = true
	case "capture":
		e.capture[link(c.Args[0])] = true
	case "hold":
		e.hold[link(c.Args[0])] = strings.Join(c.Args[1:], " ")
	case "replay":
		e.queue = append(e.queue, e.captured...)
		e.captured = nil
		e.run()
	case "inject":
		return e.inject(c)
	case "silence":
		for _, id := range e.ids() {
			d := e.devs[id]
			for _, o := range e.ids() {
				if n, limit, ok := d.s.SilenceOf(ID(o)); ok {
					fmt.Fprintf(&e.out, "%s: %s silent %d of %d ticks\n", id, o, n, limit)
				}
			}
		}
	case "state":
		for _, id := range e.ids() {
			d := e.devs[id]
			plan := "-"
			if p := d.s.Plan(); p != nil {
				plan = strconv.FormatUint(p.ID, 10)
			}
			gone := ""
			if d.gone {
				gone = " gone"
			}
			fmt.Fprintf(&e.out, "%s: %s plan=%s%s\n", id, d.s.State(), plan, gone)
		}
	default:
		return fmt.Errorf("unknown command %q", c.Name)
	}
	return nil
}

// ID is the device ID a script's device name stands for: the name's bytes,
// so that IDs sort as their names do (the session sorts peers by ID).
func ID(name string) deviceid.ID {
	var id deviceid.ID
	copy(id[:], name)
	return id
}

// name is the script's name of a device ID (its text when no device has
// it).
func (e *Env) name(id deviceid.ID) string {
	for n := range e.devs {
		if ID(n) == id {
			return n
		}
	}
	return id.String()
}

// names writes device IDs in the output (actions print them) as the
// script's names.
func (e *Env) names() *strings.Replacer {
	var r []string
	for _, n := range e.ids() {
		r = append(r, ID(n).String(), n)
	}
	return strings.NewReplacer(r...)
}

func (e *Env) addDevice(id string) {
	if _, ok := e.devs[id]; !ok {
		e.devs[id] = &dev{id: id, s: ring.New(ID(id), e.TickMs)}
	}
}

func link(s string) [2]string {
	a, b, _ := strings.Cut(s, "->")
	return [2]string{a, b}
}

// plan: plan id=1 k=2 a=0-2,4-6 b=2-3,6-7 [release=b] [nembd=2]; the
// first device listed is the head.
func (e *Env) plan(c Cmd) error {
	p := &wire.Plan{ID: uint64(atoi(must(c.Arg("id")))), K: atoi(must(c.Arg("k"))), NEmbd: 2, DType: wire.F32}
	if v, ok := c.Arg("nembd"); ok {
		p.NEmbd = atoi(v)
	}
	release, _ := c.Arg("release")
	for _, a := range c.Args {
		id, v, _ := strings.Cut(a, "=")
		if _, ok := e.devs[id]; !ok {
			continue
		}
		d := wire.Device{ID: ID(id), Release: slices.Contains(strings.Split(release, ","), id)}
		for _, w := range strings.Split(v, ",") {
			s, t, _ := strings.Cut(w, "-")
			d.Windows = append(d.Windows, wire.Range{Start: atoi(s), End: atoi(t)})
			p.Layers = max(p.Layers, atoi(t))
		}
		p.Devices = append(p.Devices, d)
	}
	// What the head installs is what the wire carries.
	typ, payload, err := wire.Encode(p)
	if err != nil {
		return err
	}
	m, err := wire.Decode(typ, payload)
	if err != nil {
		return err
	}
	e.head, e.layers, e.nEmbd = e.name(p.Devices[0].ID), p.Layers, p.NEmbd
	e.step(e.head, ring.PlanInstalled{Plan: m.(*wire.Plan)})
	return nil
}

// inject b->c seq=3 r=0 [layers=2-3] [nembd=9]: a forged activation.
func (e *Env) inject(c Cmd) error {
	l := link(c.Args[0])
	p := e.devs[l[1]].s.Plan()
	if p == nil {
		return fmt.Errorf("%s has no plan", l[1])
	}
	a := &wire.Activation{Plan: p.ID, Seq: uint64(atoi(must(c.Arg("seq")))), Round: atoi(must(c.Arg("r"))), Rows: 1, NEmbd: p.NEmbd, DType: p.DType}
	if i := p.Index(ID(l[0])); i >= 0 {
		a.Layers = p.Devices[i].Windows[a.Round]
	}
	if v, ok := c.Arg("layers"); ok {
		s, t, _ := strings.Cut(v, "-")
		a.Layers = wire.Range{Start: atoi(s), End: atoi(t)}
	}
	if v, ok := c.Arg("nembd"); ok {
		a.NEmbd = atoi(v)
	}
	if v, ok := c.Arg("plan"); ok {
		a.Plan = uint64(atoi(v))
	}
	a.Data = make([]byte, a.Rows*a.NEmbd*a.DType.Size())
	fmt.Fprintf(&e.out, "%s->%s %s (injected)\n", l[0], l[1], ring.MsgString(a))
	e.queue = append(e.queue, delivery{l[1], ring.FrameIn{From: ID(l[0]), Msg: a}})
	e.run()
	return nil
}

func (e *Env) ids() []string {
	ids := make([]string, 0, len(e.devs))
	for id := range e.devs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (e *Env) live() []string {
	var ids []string
	for _, id := range e.ids() {
		if !e.devs[id].gone {
			ids = append(ids, id)
		}
	}
	return ids
}

func (e *Env) step(id string, ev ring.Event) {
	e.queue = append(e.queue, delivery{id, ev})
	e.run()
}

// run delivers events until none is left.
func (e *Env) run() {
	for len(e.queue) > 0 {
		d := e.queue[0]
		e.queue = e.queue[1:]
		dv := e.devs[d.to]
		if dv == nil || dv.gone {
			continue
		}
		if dv.stalled > 0 {
			dv.backlog = append(dv.backlog, d)
			continue
		}
		for _, a := range dv.s.Step(d.ev) {
			e.do(dv, a)
		}
	}
}

// tick moves time by one period. Every live link answers its pings, but a
// stopped device (stall) answers and hears nothing and does not tick; a
// late one (late) reads no answer before its tick, which comes 3 periods
// after the previous one. A device whose stall is over first takes what
// reached it meanwhile, then ticks late.
func (e *Env) tick(late []string) {
	live := e.live()
	awake := func(id string) bool { return e.devs[id].stalled == 0 }
	for _, id := range live {
		d := e.devs[id]
		if !awake(id) {
			continue
		}
		e.queue = append(e.queue, d.backlog...)
		d.backlog = nil
		for _, o := range live {
			if o != id && awake(o) && !slices.Contains(late, id) {
				e.queue = append(e.queue, delivery{id, ring.Heard{From: ID(o), RTTMs: e.devs[o].rttMs, Work: e.devs[o].work}})
			}
		}
		gap := e.TickMs
		if d.gapMs > 0 {
			gap = d.gapMs
		}
		if slices.Contains(late, id) {
			gap = 3 * e.TickMs
		}
		if d.missed > 0 {
			gap, d.missed = (d.missed+1)*e.TickMs, 0
		}
		e.queue = append(e.queue, delivery{id, ring.Tick{GapMs: gap}})
	}
	e.run()
	for _, id := range live {
		d := e.devs[id]
		if !awake(id) {
			d.stalled--
			d.missed++
			continue
		}
		if d.work > 0 && len(d.pending) > 0 {
			d.work++
		}
		var keep []pendingCompute
		for _, pc := range d.pending {
			if pc.left--; pc.left > 0 {
				keep = append(keep, pc)
				continue
			}
			e.queue = append(e.queue, delivery{id, e.compute(pc.c)})
		}
		d.pending = keep
	}
	e.run()
}

func (e *Env) do(d *dev, a ring.Action) {
	switch a := a.(type) {
	case ring.Send:
		to := e.name(a.To)
		fmt.Fprintf(&e.out, "%s->%s %s\n", d.id, to, ring.MsgString(a.Msg))
		// Through the codec, as on a real link.
		typ, p, err := wire.Encode(a.Msg)
		if err != nil {
			fmt.Fprintf(&e.out, "%s: encode error: %v\n", d.id, err)
			return
		}
		m, err := wire.Decode(typ, p)
		if err != nil {
			fmt.Fprintf(&e.out, "%s: decode error: %v\n", to, err)
			return
		}
		l := [2]string{d.id, to}
		in := delivery{to, ring.FrameIn{From: ID(d.id), Msg: m}}
		if e.devs[to] == nil || e.devs[to].gone {
			fmt.Fprintf(&e.out, "  (%s is gone: frame lost)\n", to)
			return
		}
		if kind, ok := e.hold[l]; ok && strings.HasPrefix(ring.MsgString(m), kind) {
			delete(e.hold, l)
			fmt.Fprintf(&e.out, "  (held)\n")
			e.captured = append(e.captured, in)
			return
		}
		e.queue = append(e.queue, in)
		if _, ok := m.(*wire.Activation); ok {
			// A worker reports each window it passed on to its head, after
			// the activation, as the driver's DeviceStats does.
			if p := d.s.Plan(); p != nil && p.Index(ID(d.id)) > 0 {
				head := e.name(p.Devices[0].ID)
				rep := delivery{head, ring.Passed{From: ID(d.id), ComputeMs: d.slow * e.TickMs}}
				// hold B->HEAD Passed: the report comes late (on its own
				// link, behind a busy or starved sender), after the
				// successor's.
				if l := [2]string{d.id, head}; e.hold[l] == "Passed" {
					delete(e.hold, l)
					fmt.Fprintf(&e.out, "  (%s's report held)\n", d.id)
					e.captured = append(e.captured, rep)
				} else {
					e.queue = append(e.queue, rep)
				}
			}
			if e.dupNext[l] {
				delete(e.dupNext, l)
				fmt.Fprintf(&e.out, "  (duplicated)\n")
				e.queue = append(e.queue, in)
			}
			if e.capture[l] {
				delete(e.capture, l)
				e.captured = append(e.captured, in)
			}
		}
	case ring.Prepare:
		fmt.Fprintf(&e.out, "%s: %s\n", d.id, a)
		ev := ring.Prepared{Plan: a.Plan.ID}
		if d.failPrep != "" {
			ev.Code, ev.Text = wire.CodeNoSpace, d.failPrep
		}
		e.queue = append(e.queue, delivery{d.id, ev})
	case ring.Compute:
		fmt.Fprintf(&e.out, "%s: %s\n", d.id, a)
		if d.frozen {
			fmt.Fprintf(&e.out, "  (%s's engine is frozen)\n", d.id)
			return
		}
		if d.slow > 0 {
			d.pending = append(d.pending, pendingCompute{d.slow, a})
			return
		}
		e.queue = append(e.queue, delivery{d.id, e.compute(a)})
	case ring.EmitToken:
		fmt.Fprintf(&e.out, "%s: %s (reference %d)\n", d.id, a, Reference(e.tokens[a.Stream], e.layers, e.nEmbd))
	default:
		fmt.Fprintf(&e.out, "%s: %s\n", d.id, a)
	}
}

// compute is the fake engine.
func (e *Env) compute(c ring.Compute) ring.ComputeDone {
	var h [][]float32
	if c.Tokens != nil {
		h = embed(c.Tokens, e.nEmbd)
	} else {
		v := wire.F32s(c.Hidden.Data)
		for r := range c.Hidden.Rows {
			h = append(h, v[r*c.Hidden.NEmbd:(r+1)*c.Hidden.NEmbd])
		}
	}
	for l := c.Window.Start; l < c.Window.End; l++ {
		layer(h, l)
	}
	if c.Output {
		return ring.ComputeDone{Seq: c.Seq, Round: c.Round, Output: true, Token: output(h)}
	}
	var flat []float32
	for _, row := range h {
		flat = append(flat, row...)
	}
	return ring.ComputeDone{Seq: c.Seq, Round: c.Round, Hidden: &wire.Activation{Rows: len(h), NEmbd: len(h[0]), DType: wire.F32, Data: wire.F32Data(flat)}}
}

func embed(toks []int32, nEmbd int) [][]float32 {
	h := make([][]float32, len(toks))
	for i, t := range toks {
		h[i] = make([]float32, nEmbd)
		for j := range h[i] {
			h[i][j] = float32(int(t) + j)
		}
	}
	return h
}

func layer(h [][]float32, l int) {
	for _, row := range h {
		for j, x := range row {
			row[j] = float32((31*int(x) + l + 1) % 65521)
		}
	}
}

func output(h [][]float32) int32 { return int32(int(h[len(h)-1][0]) % 1000) }

// Reference is the fake model's token for tokens on one device.
func Reference(tokens []int32, layers, nEmbd int) int32 {
	h := embed(tokens, nEmbd)
	for l := range layers {
		layer(h, l)
	}
	return output(h)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func must(s string, _ bool) string { return s }
