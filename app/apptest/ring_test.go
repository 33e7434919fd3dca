//go:build linux

package apptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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

// chatRun is one `homering chat` on a node: its reply as streamed, when each
// piece arrived, and the stats it printed with --json.
type chatRun struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	pieces []time.Time // arrival of each read from stdout
	errb   bytes.Buffer
	exited chan struct{} // closed when the process has been waited for; then err is set
	err    error
}

// startChat runs `homering chat --json --temp 0 ARGS...` in n's namespace.
func startChat(t *testing.T, n *Node, args ...string) *chatRun {
	t.Helper()
	full := append([]string{"netns", "exec", n.NS, n.env.Bin, "chat", "--json", "--temp", "0", "--seed", "1"}, args...)
	cmd := exec.Command("ip", full...)
	cmd.Env = append(os.Environ(), "HOMERING_HOME="+n.Home)
	r := &chatRun{cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &r.errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := stdout.Read(buf)
			if k > 0 {
				r.mu.Lock()
				r.out.Write(buf[:k])
				r.pieces = append(r.pieces, time.Now())
				r.mu.Unlock()
			}
			if err != nil {
				break
			}
		}
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // an error when it has ended already
		<-r.exited
	})
	return r
}

// firstAfter is when the first piece of output arrived after at.
func (r *chatRun) firstAfter(at time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pieces {
		if p.After(at) {
			return p, true
		}
	}
	return time.Time{}, false
}

func (r *chatRun) reply() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// wait returns the reply and the stats line of --json.
func (r *chatRun) wait(t *testing.T, timeout time.Duration) (string, apitype.ChatStats) {
	t.Helper()
	select {
	case <-r.exited:
		if r.err != nil {
			t.Fatalf("homering chat: %v\nstdout: %s\nstderr: %s", r.err, r.reply(), r.errb.String())
		}
	case <-time.After(timeout):
		_ = r.cmd.Process.Kill() // an error when it has ended already
		t.Fatalf("homering chat did not finish in %s; so far: %q", timeout, r.reply())
	}
	var st apitype.ChatStats
	lines := strings.Split(strings.TrimSpace(r.errb.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &st); err != nil {
		t.Fatalf("stats are not JSON: %v\n%s", err, r.errb.String())
	}
	return r.reply(), st
}

// chat runs a chat to its end.
func chat(t *testing.T, n *Node, args ...string) (string, apitype.ChatStats) {
	t.Helper()
	return startChat(t, n, args...).wait(t, 60*time.Second)
}

// pairNodes pairs a with b: b shows a code, a enters it.
func pairNodes(t *testing.T, a, b *Node) {
	t.Helper()
	var show apitype.PairShow
	if err := json.Unmarshal([]byte(b.MustCLI(t, "pair", "-no-wait", "-json")), &show); err != nil {
		t.Fatal(err)
	}
	a.MustCLI(t, "pair", b.Addr, show.Code)
}

// pairWorkers pairs each worker with head only, as a person does (the head
// vouches for the other workers of its jobs), and waits until head sees
// them all paired, visible and contributing.
func pairWorkers(t *testing.T, head *Node, workers ...*Node) {
	t.Helper()
	ids := map[*Node]string{}
	for _, w := range workers {
		pairNodes(t, head, w)
		ids[w] = w.ID(t)
	}
	WaitFor(t, time.Minute, head.Name+" sees its workers paired and contributing", func() error {
		ps, err := head.Peers(context.Background())
		if err != nil {
			return err
		}
		for _, w := range workers {
			if p, ok := find(ps, ids[w]); !ok || !p.Paired || !p.Visible || !p.Contribute {
				return fmt.Errorf("%s's view of %s: %+v", head.Name, w.Name, p)
			}
		}
		return nil
	})
}

// killMidReply starts `homering chat ARGS` on head and kills victim's agent
// (SIGKILL) once the reply's first bytes are out; it returns the chat and
// when victim died.
func killMidReply(t *testing.T, head, victim *Node, args ...string) (*chatRun, time.Time) {
	t.Helper()
	run := startChat(t, head, args...)
	WaitFor(t, 30*time.Second, "the first tokens", func() error {
		if len(run.reply()) < 8 {
			return fmt.Errorf("%d bytes so far", len(run.reply()))
		}
		return nil
	})
	killed := time.Now()
	victim.Kill(t)
	return run, killed
}

// children lists the child processes of pid (every thread's).
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// established lists the remote ends of pid's established TCP connections.
func established(pid int) ([]netip.AddrPort, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, proto := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, proto))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan()
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || !inodes[fs[9]] || fs[3] != "01" {
				continue
			}
			if remote, err := parseProcAddr(fs[2]); err == nil {
				out = append(out, remote)
			}
		}
		_ = f.Close() // a /proc file, read only
	}
	return out, nil
}

// logLineAfter finds the first line of n's agent log containing what and
// stamped at or after since, and returns its stamp.
func logLineAfter(n *Node, what string, since time.Time) (time.Time, bool) {
	for _, line := range strings.Split(n.Log(), "\n") {
		if !strings.Contains(line, what) {
			continue
		}
		ts, _, ok := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if !ok {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && !at.Before(since.Truncate(time.Millisecond)) {
			return at, true
		}
	}
	return time.Time{}, false
}

// connectedTo reports whether pid has an established connection to addr.
func connectedTo(pid int, addr string) (bool, error) {
	rs, err := established(pid)
	if err != nil {
		return false, err
	}
	for _, r := range rs {
		if r.Addr().String() == addr {
			return true, nil
		}
	}
	return false, nil
}

// TestRing is the proof of issue 8 items 4, 5 and 7 on real networking: three
// `homering headless` agents in network namespaces, paired over real mDNS and
// TLS, contributing; chats on the head forced across all three give the
// single-device reply, survive a worker killed mid-generation, and a head
// killed mid-generation ends the workers' job.
func TestRing(t *testing.T) {
	// The agents log their engines' stderr at debug: the workers' "ring job
	// ended" lines are the proof that a lost head ends the job.
	t.Setenv("HOMERING_DEBUG", "1")
	env := NewEnv(t)
	a, b, c := env.NewNode(t, "a"), env.NewNode(t, "b"), env.NewNode(t, "c")
	nodes := []*Node{a, b, c}
	var report []string
	defer func() { t.Logf("measured:\n  %s", strings.Join(report, "\n  ")) }()

	// A generated llama of 6 layers: k=2 across 3 devices needs 3 layers a round.
	gen := filepath.Join(t.TempDir(), "llama6.gguf")
	if out, err := exec.Command(env.Bin, "gen-model", "-layers", "6", "-type", "Q8_0", "-o", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen-model: %v\n%s", err, out)
	}
	contributing(t, 512, nodes...)

	// The single-device replies, before any device is paired.
	const prompt = "Once upon a time"
	storiesRef, st := chat(t, a, "-m", stories260K, "-n", "48", prompt)
	if st.Ring != nil || st.CompletionTokens == 0 {
		t.Fatalf("reference chat on stories260K: ring %+v, %d tokens; want this device alone", st.Ring, st.CompletionTokens)
	}
	genRef, _ := chat(t, a, "-m", gen, "-n", "48", prompt)
	longRef, st := chat(t, a, "-m", stories260K, "-n", "160", prompt)
	if st.CompletionTokens < 100 {
		t.Fatalf("the reference for the fault test has %d tokens, too few to kill a worker mid-generation", st.CompletionTokens)
	}

	pairWorkers(t, a, b, c)
	ids := map[*Node]string{a: a.ID(t), b: b.ID(t), c: c.ID(t)}

	for _, tt := range []struct {
		name, model, want string
		k                 int
	}{
		{"stories260K k=1", stories260K, storiesRef, 1},
		{"generated k=1", gen, genRef, 1},
		{"generated k=2", gen, genRef, 2},
	} {
		t.Run("ring across three equals one device: "+tt.name, func(t *testing.T) {
			got, st := chat(t, a, "-m", tt.model, "-n", "48", "--devices", "all", "--rounds", strconv.Itoa(tt.k), prompt)
			if st.Ring == nil || len(st.Ring.Devices) != 3 || st.Ring.K != tt.k {
				t.Fatalf("ring %+v, want 3 devices at k=%d", st.Ring, tt.k)
			}
			if got != tt.want {
				t.Errorf("ring reply differs from the single-device reply:\n ring: %q\n one:  %q", got, tt.want)
			}
			report = append(report, fmt.Sprintf("%s: TTFT %.0f ms, TPOT %.2f ms/token (%d tokens)", tt.name, st.TTFTMS, st.TPOTMS, st.CompletionTokens))
		})
	}

	var kept apitype.ChatStats // the kept job's turn, which the workers still hold
	t.Run("the next turn on the same ring reuses its job", func(t *testing.T) {
		// The head holds the last chat's ring job (k=2 over six one-layer
		// windows: a new plan could only order the devices otherwise, which
		// ties, so the last plan is kept) for the next turn: the same
		// conversation again runs on it, no new job, and gives the same
		// reply. (A prompt this short, under one 512-token prefill pass, is
		// prefilled again: engine/runner keeps only whole passes.)
		start := time.Now()
		got, st := chat(t, a, "-m", gen, "-n", "48", "--devices", "all", "--rounds", "2", prompt)
		if got != genRef {
			t.Errorf("reply on the kept ring job differs from the single-device reply:\n kept: %q\n one:  %q", got, genRef)
		}
		if st.Ring == nil || len(st.Ring.Devices) != 3 {
			t.Fatalf("ring %+v, want the three devices", st.Ring)
		}
		if _, ok := logLineAfter(a, "ring job kept from the last request", start); !ok {
			t.Error("the head's engine did not log running on the kept ring job")
		}
		report = append(report, fmt.Sprintf("next turn on the kept ring job: TTFT %.0f ms, TPOT %.2f ms/token", st.TTFTMS, st.TPOTMS))
		kept = st
	})

	t.Run("each worker shows whose chat it serves and its layers", func(t *testing.T) {
		// The head holds its job idle for the next turn: each worker's
		// status names the head and the layers of its windows in that job.
		if kept.Ring == nil {
			t.Fatal("no kept ring job to look at")
		}
		head, err := deviceid.Parse(ids[a])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []*Node{b, c} {
			var layers []string
			for _, d := range kept.Ring.Devices {
				if d.ID.String() == ids[w] {
					for _, win := range d.Windows {
						span := fmt.Sprint(win.Start) // one layer: "4"
						if win.End-win.Start > 1 {
							span = fmt.Sprintf("%d-%d", win.Start, win.End-1)
						}
						layers = append(layers, span)
					}
				}
			}
			// "the chat of NAME (SHORT): layers …": the name is the node's host name.
			want := fmt.Sprintf("(%s): layers %s, ", head.Short(), strings.Join(layers, ", "))
			out := w.MustCLI(t, "status")
			if len(layers) == 0 || !strings.Contains(out, "the chat of ") || !strings.Contains(out, want) {
				t.Errorf("homering status on worker %s:\n%s\nwant it serving %s with %q", w.Name, out, head.Short(), want)
			}
			t.Logf("worker %s: %s", w.Name, firstLineWith(out, "the chat of"))
		}
	})

	t.Run("homering status shows the last ring", func(t *testing.T) {
		out := a.MustCLI(t, "status")
		t.Logf("homering status on the head:\n%s", out)
		for _, want := range []string{"last ring", "(head)", "MEASURED ms", "PRESSURE"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("the device map shows the plan the next chat runs, and a memory budget holds", func(t *testing.T) {
		// 8 MiB on the head holds its input and output layers, buffers, KV
		// and one of the generated model's six 0.7 MB layers: without the
		// budget the head plans every layer alone (the chats above), with it
		// the plan must take b or c. The map plans from the peers' last
		// looks (the first GET starts them); the chat, within 30 s of them,
		// looks at nobody and runs the same plan (app/planner).
		a.MustCLI(t, "settings", "model="+gen, "context_tokens=512", "memory_budget=8MiB")
		defer a.MustCLI(t, "settings", "model=", "memory_budget=0")
		var next apitype.Plan
		WaitFor(t, 30*time.Second, "the device map's plan to take a peer", func() error {
			out, err := a.CLI(context.Background(), "status", "--next", "--json")
			if err != nil {
				return err
			}
			next = apitype.Plan{}
			if err := json.Unmarshal([]byte(out), &next); err != nil {
				return err
			}
			in := 0
			for _, d := range next.Devices {
				if d.InRing {
					in++
				}
			}
			if in < 2 {
				return fmt.Errorf("the map plans %d device(s): %s", in, out)
			}
			return nil
		})
		got, st := chat(t, a, "-m", gen, "-n", "48", prompt)
		if st.Ring == nil {
			t.Fatalf("the chat ran on the head alone (%s) while the map planned a ring: the budget was not honoured", st.Alone)
		}
		if got != genRef {
			t.Errorf("ring reply differs from the single-device reply:\n ring: %q\n one:  %q", got, genRef)
		}
		shown, ran := map[deviceid.ID][]apitype.Window{}, map[deviceid.ID][]apitype.Window{}
		for _, d := range next.Devices {
			if d.InRing {
				shown[d.ID] = d.Windows
			}
		}
		for _, d := range st.Ring.Devices {
			ran[d.ID] = d.Windows
		}
		if !reflect.DeepEqual(shown, ran) {
			t.Errorf("the chat ran another plan than the map showed:\n map:  %v\n chat: %v", shown, ran)
		}
		report = append(report, fmt.Sprintf("head budget 8 MiB: map and chat ran %v (TTFT %.0f ms)", ran, st.TTFTMS))
	})

	t.Run("a worker killed mid-generation: the reply finishes unchanged", func(t *testing.T) {
		// stories260K: a trained model's logits are far from ties, so the
		// re-prefill's batched arithmetic picks the same tokens as the
		// unfaulted run's one-token steps.
		run, killed := killMidReply(t, a, c, "-m", stories260K, "-n", "160", "--devices", "all", "--rounds", "1", prompt)
		got, st := run.wait(t, 60*time.Second)
		if got != longRef {
			t.Errorf("reply after losing c differs from the unfaulted one:\n got:  %q\n want: %q", got, longRef)
		}
		if st.Ring == nil || st.Ring.Replans < 1 || len(st.Ring.Devices) != 2 {
			t.Errorf("ring after the loss: %+v, want a re-plan onto 2 devices", st.Ring)
		}
		next, ok := run.firstAfter(killed)
		if !ok {
			t.Fatalf("no token after the kill; reply %q", got)
		}
		// The engine child re-plans (ring.PlanWithout): its own line, passed
		// on at debug, says when.
		replanned, ok := logLineAfter(a, "ring re-planned without lost devices", killed)
		if !ok {
			t.Fatal("the head logged no re-plan after the kill")
		}
		report = append(report, fmt.Sprintf("worker killed → head re-planned %s, + loss → next token %.0f ms (runner); first output after the kill %s (a token already in flight)",
			replanned.Sub(killed).Round(time.Millisecond), st.Ring.LossToTokenMs, next.Sub(killed).Round(time.Millisecond)))
	})

	t.Run("the last worker's engine killed mid-generation: the head finishes alone", func(t *testing.T) {
		// c is down: the ring is a and b.
		run := startChat(t, a, "-m", stories260K, "-n", "160", "--devices", "all", "--rounds", "1", prompt)
		var runner int
		WaitFor(t, 30*time.Second, "the first tokens, with b's engine connected to a", func() error {
			if len(run.reply()) < 8 {
				return fmt.Errorf("%d bytes so far", len(run.reply()))
			}
			for _, p := range children(b.PID()) {
				if ok, _ := connectedTo(p, a.Addr); ok {
					runner = p
					return nil
				}
			}
			return fmt.Errorf("b's engine (children %v) has no connection to a", children(b.PID()))
		})
		if err := syscall.Kill(runner, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		got, st := run.wait(t, 60*time.Second)
		if got != longRef {
			t.Errorf("reply after losing b's engine differs from the unfaulted one:\n got:  %q\n want: %q", got, longRef)
		}
		if st.Ring == nil || st.Ring.Replans < 1 || len(st.Ring.Devices) != 1 {
			t.Errorf("ring after the loss: %+v, want a re-plan onto the head alone", st.Ring)
		}
	})

	// b's agent serves again with a new engine, c's agent is new.
	t.Run("devices that come back are used from the next request", func(t *testing.T) {
		back := time.Now()
		c.Start(t)
		WaitFor(t, time.Minute, "a sees c again", func() error {
			ps, err := a.Peers(context.Background())
			if err != nil {
				return err
			}
			if p, ok := find(ps, ids[c]); !ok || !p.Visible || !p.Contribute {
				return fmt.Errorf("a's view of c: %+v", p)
			}
			return nil
		})
		// The planner takes peers with a control link (never dialled on the
		// request path): on a loaded machine mDNS shows c before the link
		// is up (a CI run planned without c 0.6 s before it).
		WaitFor(t, time.Minute, "a's control link to c", func() error {
			if _, ok := a.Event("link up", ids[c], back); !ok {
				return fmt.Errorf("no link up to c logged yet")
			}
			return nil
		})
		got, st := chat(t, a, "-m", stories260K, "-n", "48", "--devices", "all", prompt)
		if st.Ring == nil || len(st.Ring.Devices) != 3 {
			t.Fatalf("ring %+v, want c back in it", st.Ring)
		}
		if got != storiesRef {
			t.Errorf("reply with c back differs:\n got:  %q\n want: %q", got, storiesRef)
		}
	})

	t.Run("a worker cut off the network mid-generation: the head notices the silence and finishes", func(t *testing.T) {
		run := startChat(t, a, "-m", stories260K, "-n", "160", "--devices", "all", "--rounds", "1", prompt)
		WaitFor(t, 30*time.Second, "the first tokens", func() error {
			if len(run.reply()) < 8 {
				return fmt.Errorf("%d bytes so far", len(run.reply()))
			}
			return nil
		})
		// No FIN, no RST: c's packets just stop, as when a laptop's Wi-Fi drops.
		cut := time.Now()
		env.ip("-n", c.NS, "link", "set", "lan0", "down")
		defer env.ip("-n", c.NS, "link", "set", "lan0", "up")
		got, st := run.wait(t, 60*time.Second)
		if got != longRef {
			t.Errorf("reply after cutting c off differs from the unfaulted one:\n got:  %q\n want: %q", got, longRef)
		}
		// b, whose activations went to c, may be lost with it (its link to
		// c hangs); the reply must finish either way.
		if st.Ring == nil || st.Ring.Replans < 1 || !slices.ContainsFunc(st.Ring.Lost, func(id deviceid.ID) bool { return id.String() == ids[c] }) || len(st.Ring.Devices) > 2 {
			t.Fatalf("ring after the cut: %+v, want a re-plan without c", st.Ring)
		}
		replanned, ok := logLineAfter(a, "ring re-planned without lost devices", cut)
		if !ok {
			t.Fatal("the head logged no re-plan after the cut")
		}
		report = append(report, fmt.Sprintf("worker cut off (silent) → head re-planned %s, + loss → next token %.0f ms (runner); finished on %d device(s) after %d re-plan(s)",
			replanned.Sub(cut).Round(time.Millisecond), st.Ring.LossToTokenMs, len(st.Ring.Devices), st.Ring.Replans))
	})

	t.Run("the head killed mid-generation: the worker's job ends within seconds", func(t *testing.T) {
		run := startChat(t, a, "-m", gen, "-n", "400", "--devices", "all", prompt)
		WaitFor(t, 30*time.Second, "the first tokens", func() error {
			if len(run.reply()) < 8 {
				return fmt.Errorf("%d bytes so far", len(run.reply()))
			}
			return nil
		})
		var runner int
		for _, p := range children(b.PID()) {
			if ok, _ := connectedTo(p, a.Addr); ok {
				runner = p
			}
		}
		if runner == 0 {
			t.Fatalf("b's runner has no connection to the head a (children %v)", children(b.PID()))
		}
		killed := time.Now()
		a.Kill(t)
		d := WaitFor(t, 10*time.Second, "b's runner drops the head's connections", func() error {
			if ok, err := connectedTo(runner, a.Addr); err != nil || ok {
				return fmt.Errorf("still connected to %s (err %v)", a.Addr, err)
			}
			return nil
		})
		var ended time.Time
		WaitFor(t, 10*time.Second, "b's engine logs the end of the job", func() error {
			var ok bool
			if ended, ok = logLineAfter(b, "ring job ended; windows closed", killed); !ok {
				return errors.New("not yet")
			}
			return nil
		})
		report = append(report, fmt.Sprintf("head killed → worker's connections to it closed: %s, its job ended and windows closed: %s",
			d.Round(time.Millisecond), ended.Sub(killed).Round(time.Millisecond)))
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", runner)); err != nil {
			t.Errorf("b's runner is gone after the head left (%v); it should end the job and keep serving", err)
		}
	})
}

// firstLineWith is the first line of out containing s, or "".
func firstLineWith(out, s string) string {
	for l := range strings.Lines(out) {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
