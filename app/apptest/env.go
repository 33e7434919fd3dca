//go:build linux

package apptest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/internal/testcgroup"
	"homering/internal/testwait"
)

// Env is one isolated network with a bridge and a router.
type Env struct {
	t      *testing.T
	Bin    string // built homering binary
	Prefix string // unique name prefix
	br     string // bridge namespace
	mu     sync.Mutex
	nodes  []*Node
	nextIP int
}

// NewEnv builds the binary and creates the bridge namespace.
func NewEnv(t *testing.T) *Env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("apptest needs root to create network namespaces (CI runs as root): run go test as root")
	}
	var rnd [3]byte
	rand.Read(rnd[:])
	e := &Env{t: t, Prefix: "hr" + hex.EncodeToString(rnd[:]), nextIP: 1}
	e.br = e.Prefix + "-br"
	e.Bin = buildBinary(t)

	t.Cleanup(e.cleanup)
	e.ip("netns", "add", e.br)
	e.ip("-n", e.br, "link", "set", "lo", "up")
	e.ip("-n", e.br, "link", "add", "br0", "type", "bridge")
	e.ip("-n", e.br, "addr", "add", "10.77.1.254/24", "dev", "br0")
	e.ip("-n", e.br, "link", "set", "br0", "up")
	e.run("ip", "netns", "exec", e.br, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	return e
}

var buildOnce struct {
	sync.Once
	path string
	err  error
	out  []byte
}

// buildBinary builds homering once per test process.
func buildBinary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "homering-apptest-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "homering")
		// build/env.sh sets the cgo flags every build of this module uses;
		// with other flags the cgo packages would be rebuilt from scratch.
		cmd := exec.Command("bash", "-c", `. build/env.sh && exec go build -o "$0" .`, buildOnce.path)
		cmd.Dir = "../.." // module root, from app/apptest
		buildOnce.out, buildOnce.err = cmd.CombinedOutput()
	})
	if buildOnce.err != nil {
		t.Fatalf("go build homering: %v\n%s", buildOnce.err, buildOnce.out)
	}
	return buildOnce.path
}

func (e *Env) run(name string, args ...string) string {
	e.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (e *Env) ip(args ...string) { e.t.Helper(); e.run("ip", args...) }

func (e *Env) cleanup() {
	e.mu.Lock()
	nodes := e.nodes
	e.mu.Unlock()
	for _, n := range nodes {
		n.kill()
		if e.t.Failed() {
			e.t.Logf("--- log of node %s (%s):\n%s", n.Name, n.NS, n.Log())
		}
		if n.cg != nil {
			n.cg.Remove()
		}
	}
	// Best effort: a namespace that is gone already is what we want.
	for _, n := range nodes {
		_ = exec.Command("ip", "netns", "del", n.NS).Run()
	}
	_ = exec.Command("ip", "netns", "del", e.br).Run()
}

// NodeOption changes how a node is attached.
type NodeOption func(*nodeOpts)

type nodeOpts struct {
	remote  bool
	home    string
	environ []string
	memCap  int64
}

// Remote puts the node on the other side of the router, with no multicast route.
func Remote() NodeOption { return func(o *nodeOpts) { o.remote = true } }

// Environ adds KEY=VALUE pairs to the environment of the node's agent and
// CLI calls (e.g. a GPU backend directory for one node only).
func Environ(kv ...string) NodeOption {
	return func(o *nodeOpts) { o.environ = append(o.environ, kv...) }
}

// Home starts the node with a copy of another node's config directory.
func Home(copyOf *Node) NodeOption { return func(o *nodeOpts) { o.home = copyOf.Home } }

// MemoryCap runs the node's agent (and the engines it starts) in a memory
// cgroup of its own with a limit of bytes, as bench/rig's devices run: the
// memory pressure it reports is then its own processes' (non-reclaimable
// use over the cap), which other work on this machine does not move.
func MemoryCap(bytes int64) NodeOption { return func(o *nodeOpts) { o.memCap = bytes } }

// Node is one device: a namespace, a config directory and maybe a process.
type Node struct {
	Name string
	NS   string
	Addr string // its IPv4 address
	Home string // HOMERING_HOME
	env  *Env
	// extraEnv is the agent's and the CLI's environment beyond the test's.
	extraEnv []string
	cg       *testcgroup.Cgroup // nil: the agent runs in the test's cgroup

	mu      sync.Mutex
	cmd     *exec.Cmd
	log     bytes.Buffer
	done    chan struct{}
	started time.Time
}

// NewNode creates a namespace attached to the bridge (or router) and a
// config directory. The agent is not started.
func (e *Env) NewNode(t *testing.T, name string, opts ...NodeOption) *Node {
	t.Helper()
	var o nodeOpts
	for _, f := range opts {
		f(&o)
	}
	e.mu.Lock()
	idx := e.nextIP
	e.nextIP++
	e.mu.Unlock()
	n := &Node{Name: name, NS: e.Prefix + "-" + name, Home: filepath.Join(t.TempDir(), name), env: e}
	n.extraEnv = o.environ
	if o.memCap > 0 {
		cg, err := testcgroup.New(n.NS, o.memCap)
		if err != nil {
			t.Fatalf("node %s: memory cgroup: %v", name, err)
		}
		n.cg = cg
	}
	e.mu.Lock()
	e.nodes = append(e.nodes, n)
	e.mu.Unlock()
	host := fmt.Sprintf("%sv%d", e.Prefix, idx) // ≤ 15 bytes
	e.ip("netns", "add", n.NS)
	e.ip("-n", n.NS, "link", "set", "lo", "up")
	e.ip("link", "add", host, "type", "veth", "peer", "name", "lan0", "netns", n.NS)
	e.ip("link", "set", host, "netns", e.br)
	if o.remote {
		n.Addr = fmt.Sprintf("10.77.2.%d", idx)
		e.ip("-n", e.br, "addr", "add", "10.77.2.254/32", "dev", host)
		e.ip("-n", e.br, "link", "set", host, "up")
		e.ip("-n", e.br, "route", "add", n.Addr+"/32", "dev", host)
		e.ip("-n", n.NS, "addr", "add", n.Addr+"/24", "dev", "lan0")
		e.ip("-n", n.NS, "link", "set", "lan0", "up")
		e.ip("-n", n.NS, "route", "add", "10.77.1.0/24", "via", "10.77.2.254")
	} else {
		n.Addr = fmt.Sprintf("10.77.1.%d", idx)
		e.ip("-n", e.br, "link", "set", host, "master", "br0")
		e.ip("-n", e.br, "link", "set", host, "up")
		e.ip("-n", n.NS, "addr", "add", n.Addr+"/24", "dev", "lan0")
		e.ip("-n", n.NS, "link", "set", "lan0", "up")
		e.ip("-n", n.NS, "route", "add", "default", "via", "10.77.1.254")
	}
	if o.home != "" {
		e.run("cp", "-a", o.home, n.Home)
		if err := os.Remove(filepath.Join(n.Home, apitype.InfoFile)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(n.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	return n
}

// environ is the environment of the node's agent and CLI calls: the test's
// as it is now (a test may t.Setenv after NewNode), the node's own, its home.
func (n *Node) environ() []string {
	return append(append(os.Environ(), n.extraEnv...), "HOMERING_HOME="+n.Home)
}

// CLI runs homering with args in the node's namespace and home.
func (n *Node) CLI(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.NS, n.env.Bin}, args...)...)
	cmd.Env = n.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("homering %s on %s: %v: %s%s", strings.Join(args, " "), n.Name, err, out.String(), errb.String())
	}
	return out.String(), nil
}

// MustCLI is CLI that fails the test on error.
func (n *Node) MustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := n.CLI(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Start runs `homering headless` and waits until its API answers.
func (n *Node) Start(t *testing.T) {
	t.Helper()
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
}

// start is Start for any goroutine: it returns what Start fails with.
func (n *Node) start() error {
	n.mu.Lock()
	argv := []string{"ip", "netns", "exec", n.NS, n.env.Bin, "headless"}
	if n.cg != nil {
		// nsenter, not ip netns exec, as bench/rig/enter: the latter
		// remounts /sys, which hides the cgroup file systems from the
		// agent, so it would not see its own limit and would report the
		// machine's memory pressure instead of its cgroup's.
		argv = n.cg.Wrap("nsenter", "--net=/var/run/netns/"+n.NS, "--", n.env.Bin, "headless") // sh execs nsenter, which execs homering: one PID
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = n.environ()
	cmd.Stdout, cmd.Stderr = &lockedWriter{n}, &lockedWriter{n}
	n.started = time.Now()
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return err
	}
	n.cmd, n.done = cmd, make(chan struct{})
	done := n.done
	n.mu.Unlock()
	go func() { _ = cmd.Wait(); close(done) }() // how it ended is read from its log
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-done:
			return fmt.Errorf("agent %s exited:\n%s", n.Name, n.Log())
		default:
		}
		_, err := n.CLI(context.Background(), "peers", "-json")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent %s API: not up after a minute: %v", n.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct{ n *Node }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.n.mu.Lock()
	defer w.n.mu.Unlock()
	return w.n.log.Write(p)
}

// Log returns everything the agent wrote so far.
func (n *Node) Log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

// PID is the agent's process ID (ip netns exec execs the binary in place).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd.Process.Pid
}

// MemPressure reads the node's memory cgroup (MemoryCap) now: its
// non-reclaimable memory over its cap, as the node itself reports it.
func (n *Node) MemPressure() (float64, error) {
	if n.cg == nil {
		return 0, fmt.Errorf("node %s has no memory cgroup of its own (MemoryCap)", n.Name)
	}
	return cgroupPressure(n.cg)
}

// Kill sends SIGKILL: no goodbye, no cleanup.
func (n *Node) Kill(t *testing.T) {
	t.Helper()
	n.signal(syscall.SIGKILL)
	n.wait(t)
}

// Stop sends SIGTERM and waits for a clean exit.
func (n *Node) Stop(t *testing.T) {
	t.Helper()
	n.signal(syscall.SIGTERM)
	n.wait(t)
	n.mu.Lock()
	defer n.mu.Unlock()
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("agent %s exited with %d after SIGTERM", n.Name, code)
	}
}

func (n *Node) signal(s syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Signal(s) // an error when it has ended already
	}
}

func (n *Node) wait(t *testing.T) {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("agent %s did not exit", n.Name)
	}
}

func (n *Node) kill() {
	n.signal(syscall.SIGKILL)
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
}

// Peers returns the node's peer list.
func (n *Node) Peers(ctx context.Context) (apitype.Peers, error) {
	out, err := n.CLI(ctx, "peers", "-json")
	if err != nil {
		return apitype.Peers{}, err
	}
	var ps apitype.Peers
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		return apitype.Peers{}, fmt.Errorf("decode peers of %s: %w: %s", n.Name, err, out)
	}
	return ps, nil
}

// Info returns what the running node wrote to its info file: its API's
// URL and token.
func (n *Node) Info(t *testing.T) apitype.Info {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Home, apitype.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info apitype.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	return info
}

// ID returns the node's device ID.
func (n *Node) ID(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(n.MustCLI(t, "id"))
}

// WaitFor is testwait.For at the pace of the CLI calls its conditions make
// (each poll may start a process).
func WaitFor(t *testing.T, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	return testwait.ForEvery(t, timeout, 50*time.Millisecond, what, cond)
}

// Event finds the first log line of the agent with msg="msg" about peer (its
// device ID) logged at or after since, and returns the time the agent
// stamped on it. Timing assertions use these stamps rather than when a
// polling CLI call happened to notice, so a loaded machine slows the
// polling, not the measurement.
// Lines must also contain every string in also.
func (n *Node) Event(msg, peer string, since time.Time, also ...string) (time.Time, bool) {
lines:
	for _, line := range strings.Split(n.Log(), "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) || (peer != "" && !strings.Contains(line, "peer="+peer)) {
			continue
		}
		for _, a := range also {
			if !strings.Contains(line, a) {
				continue lines
			}
		}
		ts, _, ok := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err == nil && !at.Before(since.Truncate(time.Millisecond)) {
			return at, true
		}
	}
	return time.Time{}, false
}

// Started is when the agent's process was last started.
func (n *Node) Started() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started
}
