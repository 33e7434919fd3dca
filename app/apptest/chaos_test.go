//go:build linux

package apptest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/discovery/deviceid"
)

// TestChaos is issue 21 item 1's chaos run: agents in network namespaces,
// chats on the head one after another through the API (`homering chat`,
// greedy), while a seeded random schedule kills, freezes, restarts, cuts
// off, slows and re-adds devices, the head's own engine child included.
// Every request must end within its bound, with the unfaulted reply or an
// error sentence that names what happened (its partial reply a prefix of
// the unfaulted one); no agent may crash; the agents that lived through
// the run return to their idle file descriptors, goroutines and anonymous
// memory; recovery times are printed as a distribution.
//
// It runs only when HOMERING_CHAOS is set (bench/chaos.sh sets it):
//
//	HOMERING_CHAOS=quick  stories260K, 3 agents, HOMERING_CHAOS_EVENTS (default 20) events
//	HOMERING_CHAOS=full   HOMERING_CHAOS_MODEL (a GGUF), 3 agents, default 100 events
//	HOMERING_CHAOS_SEED   the schedule's seed (default 1)
//	HOMERING_CHAOS_NODES  agents, 3 to 5 (default 3)
//	HOMERING_CHAOS_TOKENS tokens a chat (quick 160, full 32)
//
// Faults (one at a time, each followed by a random gap):
//
//	kill     SIGKILL a worker's agent; it stays down until a re-add
//	readd    start a killed worker's agent again (same config directory)
//	restart  SIGTERM a worker's agent and start it again at once
//	freeze   SIGSTOP an agent and its engine child (head or worker) for 1-4 s, then SIGCONT
//	cut      drop every packet on a device's lan0 (iptables DROP in its
//	         namespace, both ways: no FIN, no RST) for 2-6 s
//	slow     2 CPU burners (busy shell loops) in a device's namespace for
//	         3-8 s; this kernel has no netem, so slowing means CPU
//	runner   SIGKILL a worker's engine child; the agent starts a new one
//	head-runner  SIGKILL the head's own engine child: the request in
//	         flight ends with the engine's error, the next one starts a new child
func TestChaos(t *testing.T) {
	size := os.Getenv("HOMERING_CHAOS")
	if size == "" {
		t.Skip("the chaos run is a benchmark: HOMERING_CHAOS=quick or full (bench/chaos.sh) runs it")
	}
	cfg := chaosConfig{seed: 1, nodes: 3, events: 20, tokens: 160, model: stories260K, gapMin: 300 * time.Millisecond, gapMax: 2500 * time.Millisecond}
	if size == "full" {
		cfg.events, cfg.tokens, cfg.model = 100, 32, os.Getenv("HOMERING_CHAOS_MODEL")
		if cfg.model == "" {
			t.Fatal("HOMERING_CHAOS=full needs HOMERING_CHAOS_MODEL, a GGUF of about 1 GB (bench/chaos.sh generates one)")
		}
		cfg.gapMin, cfg.gapMax = 2*time.Second, 8*time.Second
	} else if size != "quick" {
		t.Fatalf("HOMERING_CHAOS=%q: want quick or full", size)
	}
	for env, p := range map[string]*int{"HOMERING_CHAOS_NODES": &cfg.nodes, "HOMERING_CHAOS_EVENTS": &cfg.events, "HOMERING_CHAOS_TOKENS": &cfg.tokens} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s=%q: %v", env, v, err)
			}
			*p = n
		}
	}
	if v := os.Getenv("HOMERING_CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("HOMERING_CHAOS_SEED=%q: %v", v, err)
		}
		cfg.seed = s
	}
	if cfg.nodes < 3 || cfg.nodes > 5 {
		t.Fatalf("HOMERING_CHAOS_NODES=%d: want 3 to 5", cfg.nodes)
	}
	runChaos(t, cfg)
}

type chaosConfig struct {
	seed                  uint64
	nodes, events, tokens int
	model                 string
	gapMin, gapMax        time.Duration
}

// chaosEvent is one fault as applied.
type chaosEvent struct {
	at, end time.Time // end: when the fault was undone (freeze, cut, slow)
	kind    string
	node    *Node
	err     error // applying it failed (a test failure)
}

// chaosReq is one chat of the run.
type chaosReq struct {
	start, end time.Time
	reply      string
	stderr     string
	failed     bool // exited non-zero
	hung       bool // killed at its bound
	stats      apitype.ChatStats
	run        *chatRun
}

func runChaos(t *testing.T, cfg chaosConfig) {
	// Debug: the head's engine lines ("ring resumed after a loss") are the
	// per-loss recovery times.
	t.Setenv("HOMERING_DEBUG", "1")
	t.Setenv("HOMERING_PROFILE_QUIET", "off") // no background measurement mid-run
	env := NewEnv(t)
	var nodes []*Node
	for i := range cfg.nodes {
		nodes = append(nodes, env.NewNode(t, string(rune('a'+i))))
	}
	head, workers := nodes[0], nodes[1:]
	contributing(t, 512, nodes...)
	const prompt = "Once upon a time"
	args := []string{"-m", cfg.model, "-n", strconv.Itoa(cfg.tokens), "--devices", "all", "--rounds", "1", prompt}

	// The unfaulted reply: the head alone, then the ring, which must agree.
	refStart := time.Now()
	ref, st := chat(t, head, "-m", cfg.model, "-n", strconv.Itoa(cfg.tokens), prompt)
	if st.Ring != nil || st.CompletionTokens == 0 {
		t.Fatalf("reference chat: ring %+v, %d tokens; want the head alone", st.Ring, st.CompletionTokens)
	}
	t.Logf("reference (head alone): %d tokens in %s", st.CompletionTokens, time.Since(refStart).Round(time.Millisecond))
	pairWorkers(t, head, workers...)
	ids := map[*Node]string{}
	for _, n := range nodes {
		ids[n] = n.ID(t)
	}
	ringStart := time.Now()
	got, st := startChat(t, head, args...).wait(t, 10*time.Minute)
	ringDur := time.Since(ringStart)
	if st.Ring == nil || len(st.Ring.Devices) != cfg.nodes || got != ref {
		t.Fatalf("unfaulted ring: %+v, reply equal: %v; want %d devices and the head's reply", st.Ring, got == ref, cfg.nodes)
	}
	// A second unfaulted chat on the kept job: the idle levels are taken
	// after it, with every agent warm (slices shipped, windows loaded).
	warmStart := time.Now()
	chat(t, head, args...)
	warmDur := time.Since(warmStart)
	// Each request's bound: the unfaulted ring chat (its first, cold,
	// run) six times over plus a minute for detection, re-plans and
	// restarted engines.
	bound := 6*ringDur + time.Minute
	t.Logf("unfaulted ring chat: %s (cold); each request's bound %s", ringDur.Round(time.Millisecond), bound.Round(time.Second))
	time.Sleep(2 * time.Second)
	idle := map[*Node]procLevels{}
	for _, n := range nodes {
		idle[n] = levels(t, n)
	}
	firstPID := map[*Node]int{}
	for _, n := range nodes {
		firstPID[n] = n.PID()
	}

	// The schedule runs beside the chats until its last event.
	var (
		mu     sync.Mutex
		events []*chaosEvent
	)
	down := map[*Node]bool{}
	done := make(chan struct{})
	var inflight time.Time // when the chat in flight started; zero between chats
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(cfg.seed, 0x68726368616f73))
		for range cfg.events {
			gap := cfg.gapMin + time.Duration(rng.Int64N(int64(cfg.gapMax-cfg.gapMin)))
			time.Sleep(gap)
			// Most faults should land mid-reply: after the gap, wait for
			// a chat in flight and strike at a random point of a chat's
			// unfaulted time (chats start back to back, so this waits
			// milliseconds).
			for {
				mu.Lock()
				busy := !inflight.IsZero()
				mu.Unlock()
				if busy {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Duration(rng.Int64N(int64(warmDur))))
			ev := chaosStep(env, rng, head, workers, down)
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}
	}()

	var reqs []*chaosReq
	running := true
	for running {
		select {
		case <-done:
			running = false
			continue
		default:
		}
		mu.Lock()
		inflight = time.Now()
		mu.Unlock()
		r := chaosChat(t, head, bound, args)
		mu.Lock()
		inflight = time.Time{}
		mu.Unlock()
		reqs = append(reqs, r)
	}
	// Everything back: killed workers re-added, then one last chat must
	// run on every device again with the unfaulted reply.
	for _, w := range workers {
		if down[w] {
			if err := w.start(); err != nil {
				t.Fatalf("re-adding %s after the run: %v", w.Name, err)
			}
			delete(down, w)
		}
	}
	settled := time.Now()
	var final *chaosReq
	WaitFor(t, 2*time.Minute, "a chat on every device again", func() error {
		final = chaosChat(t, head, bound, args)
		if final.failed || final.hung || final.stats.Ring == nil || len(final.stats.Ring.Devices) != cfg.nodes || final.reply != ref {
			return fmt.Errorf("last chat: failed %v, ring %+v, stderr %q", final.failed || final.hung, final.stats.Ring, final.stderr)
		}
		return nil
	})
	t.Logf("all %d devices back in the ring %s after the last event", cfg.nodes, time.Since(settled).Round(time.Millisecond))

	// The outcome.
	var (
		ok, failedN, lossN int
		kinds              = map[string]int{}
		errs               = map[string]int{}
		durs               []time.Duration
	)
	for _, ev := range events {
		kinds[ev.kind]++
		if ev.err != nil {
			t.Errorf("event %s on %s at %s: %v", ev.kind, ev.node.Name, ev.at.Format("15:04:05.000"), ev.err)
		}
	}
	for i, r := range reqs {
		durs = append(durs, r.end.Sub(r.start))
		during := eventsDuring(events, r)
		switch {
		case r.hung:
			t.Errorf("request %d hung: no end within %s (events during it: %s); so far %q", i, bound, during, r.reply)
		case r.failed:
			failedN++
			sentence := lastLine(r.stderr)
			errs[chaosErrorKind(sentence)]++
			if chaosErrorKind(sentence) == "" || strings.Contains(sentence, "level=") {
				t.Errorf("request %d failed without a sentence that names what happened: %q (events during it: %s)", i, r.stderr, during)
			}
			// Only the head's own engine may take a request down: a
			// worker's fault is re-planned around.
			if !strings.Contains(during, "head-runner") {
				t.Errorf("request %d failed with no fault on the head's engine during it (events: %s)", i, during)
			}
			// The CLI ends a cut-short reply with a newline.
			if !strings.HasPrefix(ref, strings.TrimSuffix(r.reply, "\n")) {
				t.Errorf("request %d failed and its partial reply is not the unfaulted reply's start:\n got:  %q\n want: %q", i, r.reply, ref)
			}
			t.Logf("request %d ended with an error after %s (events during it: %s): %s", i, r.end.Sub(r.start).Round(time.Millisecond), during, sentence)
		default:
			ok++
			if r.reply != ref {
				t.Errorf("request %d (events during it: %s) completed with another reply:\n got:  %q\n want: %q", i, during, r.reply, ref)
			}
			if r.stats.Ring != nil && r.stats.Ring.Replans > 0 {
				lossN++
			}
		}
	}
	// Recovery, from the head's engine ("ring resumed after a loss": a
	// loss noticed → the next token) and from the fault: its time → the
	// head's next such line within the request (the time to notice
	// added).
	var inEngine []time.Duration
	re := regexp.MustCompile(`ring resumed after a loss.*?loss_to_token=([0-9.]+[a-zµ]+)`)
	for _, m := range re.FindAllStringSubmatch(head.Log(), -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			inEngine = append(inEngine, d)
		}
	}
	var outside []time.Duration
	for i, ev := range events {
		what := "between requests"
		for k, r := range reqs {
			if ev.at.Before(r.start) || ev.at.After(r.end) {
				continue
			}
			what = fmt.Sprintf("request %d", k)
			if r.failed || r.hung {
				what += ": ended with an error"
				break
			}
			if r.stats.Ring == nil || r.stats.Ring.Replans == 0 {
				what += ": no re-plan"
				break
			}
			lost := ev.node == head || slices.ContainsFunc(r.stats.Ring.Lost, func(id deviceid.ID) bool { return id.String() == ids[ev.node] })
			if !lost {
				what += ": did not lose " + ev.node.Name
				break
			}
			if at, ok := logLineAfter(head, "ring resumed after a loss", ev.at); ok && at.Before(r.end) {
				outside = append(outside, at.Sub(ev.at))
				what += fmt.Sprintf(": re-planned, next token %s after the fault", at.Sub(ev.at).Round(time.Millisecond))
			} else {
				what += ": re-planned, no token after it (the reply was complete)"
			}
			break
		}
		t.Logf("event %3d at +%7.3fs: %-7s %s (%s) → %s", i, ev.at.Sub(events[0].at).Seconds(), ev.kind, ev.node.Name,
			ev.end.Sub(ev.at).Round(time.Millisecond), what)
	}
	t.Logf("chaos run: seed %d, %d agents, %d events (%s), %d requests: %d completed with the unfaulted reply (%d after re-plans), %d ended with an error (%s), 0 hung",
		cfg.seed, cfg.nodes, len(events), countStr(kinds), len(reqs), ok, lossN, failedN, countStr(errs))
	t.Logf("request time: %s (bound %s)", dist(durs), bound.Round(time.Second))
	t.Logf("recovery, loss noticed → next token (head's engine, %d losses): %s", len(inEngine), dist(inEngine))
	t.Logf("recovery, fault → next token (faults whose device the request lost, the time to notice included, %d): %s", len(outside), dist(outside))

	if dir := os.Getenv("HOMERING_CHAOS_OUT"); dir != "" {
		for _, n := range nodes {
			if err := os.WriteFile(filepath.Join(dir, "agent-"+n.Name+".log"), []byte(n.Log()), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	// No crash: each agent's log has no Go panic or fatal error, and every
	// agent that was not killed on purpose is its first process.
	for _, n := range nodes {
		l := n.Log()
		for _, bad := range []string{"panic:", "fatal error:", "SIGSEGV", "DATA RACE"} {
			if strings.Contains(l, bad) {
				t.Errorf("agent %s's log has %q", n.Name, bad)
			}
		}
	}
	// Leaks: every agent, once idle, is back at its idle level (the
	// head always lives through the run; a restarted worker is held to
	// its first life's levels).
	time.Sleep(3 * time.Second)
	for _, n := range nodes {
		after := levels(t, n)
		survived := n.PID() == firstPID[n]
		t.Logf("agent %s (%s): idle before %s, after %s", n.Name, map[bool]string{true: "lived through the run", false: "restarted during the run"}[survived], idle[n], after)
		// A restarted agent is held to the levels of its first life:
		// both ran the same chats' jobs once warm.
		if after.fds > idle[n].fds+2 {
			t.Errorf("agent %s holds %d file descriptors after the run, %d before: a leak", n.Name, after.fds, idle[n].fds)
		}
		if after.goroutines > idle[n].goroutines+5 {
			t.Errorf("agent %s runs %d goroutines after the run, %d before: a leak", n.Name, after.goroutines, idle[n].goroutines)
		}
		if after.anonKB > idle[n].anonKB+idle[n].anonKB/4+16<<10 {
			t.Errorf("agent %s's anonymous memory is %d KiB after the run, %d KiB before: a leak", n.Name, after.anonKB, idle[n].anonKB)
		}
	}
}

// chaosChat runs one chat on head to its end or its bound.
func chaosChat(t *testing.T, head *Node, bound time.Duration, args []string) *chaosReq {
	r := &chaosReq{start: time.Now()}
	r.run = startChat(t, head, args...)
	select {
	case <-r.run.exited:
	case <-time.After(bound):
		r.hung = true
		_ = r.run.cmd.Process.Kill() // an error when it has ended already
		<-r.run.exited
	}
	r.end = time.Now()
	r.reply, r.stderr = r.run.reply(), r.run.errb.String()
	if r.hung {
		return r
	}
	if r.run.err != nil {
		r.failed = true
		return r
	}
	if err := json.Unmarshal([]byte(lastLine(r.stderr)), &r.stats); err != nil {
		r.failed = true
	}
	return r
}

// chaosStep draws and applies one fault. down holds the workers killed and
// not yet re-added.
func chaosStep(env *Env, rng *rand.Rand, head *Node, workers []*Node, down map[*Node]bool) *chaosEvent {
	var up, gone []*Node
	for _, w := range workers {
		if down[w] {
			gone = append(gone, w)
		} else {
			up = append(up, w)
		}
	}
	all := append([]*Node{head}, up...)
	kinds := []string{"freeze", "cut", "slow", "head-runner"}
	if len(up) > 0 {
		kinds = append(kinds, "kill", "restart", "freeze", "cut", "runner", "runner")
	}
	if len(gone) > 0 {
		kinds = append(kinds, "readd", "readd", "readd")
	}
	ev := &chaosEvent{kind: kinds[rng.IntN(len(kinds))], at: time.Now()}
	pick := func(ns []*Node) *Node { return ns[rng.IntN(len(ns))] }
	hold := func(min, max time.Duration) time.Duration {
		return min + time.Duration(rng.Int64N(int64(max-min)))
	}
	switch ev.kind {
	case "kill":
		ev.node = pick(up)
		ev.at = time.Now()
		ev.err = stopAgent(ev.node, syscall.SIGKILL)
		down[ev.node] = true
	case "readd":
		ev.node = pick(gone)
		ev.at = time.Now()
		ev.err = ev.node.start()
		delete(down, ev.node)
	case "restart":
		ev.node = pick(up)
		ev.at = time.Now()
		if ev.err = stopAgent(ev.node, syscall.SIGTERM); ev.err == nil {
			ev.err = ev.node.start()
		}
	case "freeze":
		ev.node = pick(all)
		d := hold(time.Second, 4*time.Second)
		pids := append([]int{ev.node.PID()}, children(ev.node.PID())...)
		ev.at = time.Now()
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGSTOP) // a child may have ended already
		}
		time.Sleep(d)
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	case "cut":
		ev.node = pick(all)
		d := hold(2*time.Second, 6*time.Second)
		rules := [][]string{{"INPUT", "-i", "lan0", "-j", "DROP"}, {"OUTPUT", "-o", "lan0", "-j", "DROP"}}
		ev.at = time.Now()
		for _, r := range rules {
			if ev.err == nil {
				ev.err = nsRun(ev.node, append([]string{"iptables", "-A"}, r...)...)
			}
		}
		time.Sleep(d)
		for _, r := range rules {
			if err := nsRun(ev.node, append([]string{"iptables", "-D"}, r...)...); err != nil && ev.err == nil {
				ev.err = err
			}
		}
	case "slow":
		ev.node = pick(all)
		d := hold(3*time.Second, 8*time.Second)
		var burners []*exec.Cmd
		ev.at = time.Now()
		for range 2 {
			c := exec.Command("ip", "netns", "exec", ev.node.NS, "sh", "-c", "while :; do :; done")
			if err := c.Start(); err != nil {
				ev.err = err
				break
			}
			burners = append(burners, c)
		}
		time.Sleep(d)
		for _, c := range burners {
			_ = c.Process.Kill() // ours; it runs until killed
			_ = c.Wait()         // killed: its error says so
		}
	case "runner", "head-runner":
		ev.node = head
		if ev.kind == "runner" {
			ev.node = pick(up)
		}
		ev.at = time.Now()
		// The engine child may be between lives (just killed, not yet
		// started again): then there is nothing to kill, which is fine.
		for _, p := range children(ev.node.PID()) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	ev.end = time.Now()
	return ev
}

// stopAgent signals n's agent and waits for it to end.
func stopAgent(n *Node, sig syscall.Signal) error {
	n.signal(sig)
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-time.After(20 * time.Second):
		return fmt.Errorf("agent %s did not end within 20 s of %v", n.Name, sig)
	}
}

func nsRun(n *Node, args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", n.NS}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s in %s: %v: %s", strings.Join(args, " "), n.NS, err, out)
	}
	return nil
}

// procLevels is what an idle agent holds.
type procLevels struct {
	fds, goroutines int
	anonKB          int64
}

func (l procLevels) String() string {
	return fmt.Sprintf("%d fds, %d goroutines, RssAnon %d KiB", l.fds, l.goroutines, l.anonKB)
}

// levels reads the agent's open file descriptors (/proc/PID/fd), its
// anonymous resident memory (/proc/PID/status RssAnon) and its goroutines
// (its status API's count, asked inside its namespace).
func levels(t *testing.T, n *Node) procLevels {
	t.Helper()
	pid := n.PID()
	var l procLevels
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	l.fds = len(fds)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			l.anonKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	info := n.Info(t)
	out, err := exec.Command("ip", "netns", "exec", n.NS, "curl", "-sf", "-H", "Authorization: Bearer "+info.Token, info.URL+"/api/v1/status").Output()
	if err != nil {
		t.Fatalf("status of %s: %v", n.Name, err)
	}
	var st apitype.Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status of %s: %v: %s", n.Name, err, out)
	}
	l.goroutines = st.Goroutines
	return l
}

// chaosErrorKind names the known error sentences a fault may end a
// request with; "" for anything else.
func chaosErrorKind(sentence string) string {
	for _, k := range []struct{ kind, text string }{
		{"engine stopped", "The engine stopped unexpectedly"},
		{"engine killed", "The engine was killed from outside"},
		{"engine out of memory", "The engine was stopped by the system because memory ran out"},
	} {
		if strings.Contains(sentence, k.text) {
			return k.kind
		}
	}
	return ""
}

// eventsDuring lists the events that started while r ran.
func eventsDuring(events []*chaosEvent, r *chaosReq) string {
	var s []string
	for _, ev := range events {
		if !ev.end.Before(r.start) && !ev.at.After(r.end) {
			s = append(s, fmt.Sprintf("%s %s +%s", ev.kind, ev.node.Name, ev.at.Sub(r.start).Round(time.Millisecond)))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func countStr(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var s []string
	for _, k := range ks {
		s = append(s, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(s, ", ")
}

// dist is a distribution's p50, p90 and max.
func dist(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)] }
	return fmt.Sprintf("p50 %s, p90 %s, max %s (n=%d)", q(0.5).Round(time.Millisecond), q(0.9).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}
