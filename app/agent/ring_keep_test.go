package agent

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/discovery/identity"
	"homering/discovery/mdns"
	"homering/engine/ggml"
	"homering/engine/ring/wire"
	"homering/engine/runner"
	"homering/internal/testlog"
	"homering/internal/testwait"
)

// ringKeepModel is small: the test runs a few ring jobs of two processes.
const ringKeepModel = "../../testdata/models/llama-Q8_0.gguf"

// A ring job the head keeps for the conversation's next turn ends at once
// when the next chat could not use it: another model or context size saved
// in Settings, keeping turned off, contributing turned off on the head, the
// agent quitting. Real runner children (the agent's, the head, and a
// worker's); the worker maps its weight slice while the job is kept and
// unmaps it when the job ends. The job is kept 10 minutes, so an end seen
// within a minute is the change's doing.
func TestKeptRingJobEnds(t *testing.T) {
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	model, err := filepath.Abs(ringKeepModel)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ggml.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	layers, nEmbd := m.Info().NLayer, m.Info().NEmbd
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	child := func() *exec.Cmd { return testChild("runner") }

	headDir, workerDir, cache := t.TempDir(), t.TempDir(), t.TempDir()
	headID, workerID := deviceID(t, headDir), deviceID(t, workerDir)
	worker := runner.New(runner.Options{Command: child, Log: log})
	t.Cleanup(func() { worker.Close() })
	addr, err := worker.ServeRing(context.Background(), runner.ServeParams{Identity: workerDir, Allowed: []identity.DeviceID{mustID(t, headID)}, CacheDir: cache, Listen: "127.0.0.1:0", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	plan := &wire.Plan{ID: 1, K: 1, Layers: layers, NEmbd: nEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: mustID(t, headID), Windows: []wire.Range{{Start: 0, End: layers / 2}}},
		{ID: mustID(t, workerID), Windows: []wire.Range{{Start: layers / 2, End: layers}}},
	}}
	workerMaps := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", worker.PID()))
		if err != nil {
			t.Fatalf("read the worker's maps: %v", err)
		}
		return strings.Contains(string(b), cache)
	}

	// keptChat runs a chat on the ring from a new backend (its own engine
	// child, as an agent has) and leaves its job kept.
	keptChat := func(t *testing.T) *Agent {
		b := &Agent{sup: runner.New(runner.Options{Command: child, Log: log}), dir: t.TempDir(), threads: 1, log: log, running: map[*chatRun]struct{}{}}
		t.Cleanup(func() { b.Close() })
		g := runner.DefaultGenerate()
		g.Temperature, g.MaxTokens, g.Prompt = 0, 4, "Once upon a time"
		rp := runner.RingParams{Plan: plan, Peers: []runner.RingPeer{{ID: mustID(t, workerID), Addr: addr}}, Identity: headDir, TickMS: 1000, KeepMS: 600_000}
		if _, err := b.sup.RingGenerate(context.Background(), runner.LoadParams{Model: model, NCtx: 256, Threads: 1}, rp, g, func(runner.Token) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if !workerMaps() {
			t.Fatal("the worker does not map its slice while the job is kept")
		}
		return b
	}
	ends := func(t *testing.T) {
		t.Helper()
		testwait.True(t, time.Minute, "end of the kept job on the worker (its slice unmapped)", func() bool { return !workerMaps() })
	}
	before := apitype.Settings{Model: "/models/a.gguf", ContextTokens: 512, RingKeepSeconds: 120}

	for _, tt := range []struct {
		name     string
		change   func(*apitype.Settings)
		ends     bool
		restarts bool // the head's engine child ends too
	}{
		{"another model selected", func(s *apitype.Settings) { s.Model = "/models/b.gguf" }, true, false},
		// GPU backends load when the child starts: it must start afresh.
		{"the gpu turned off: the engine restarts", func(s *apitype.Settings) { s.GPU = "off" }, true, true},
		{"another context size", func(s *apitype.Settings) { s.ContextTokens = 1024 }, true, false},
		{"keeping turned off", func(s *apitype.Settings) { s.RingKeepSeconds = 0 }, true, false},
		{"another memory budget: the job stays", func(s *apitype.Settings) { s.MemoryBudget = 1 << 30 }, false, false},
		{"a shorter keep time: the job stays", func(s *apitype.Settings) { s.RingKeepSeconds = 30 }, false, false},
	} {
		t.Run("settings: "+tt.name, func(t *testing.T) {
			b := keptChat(t)
			after := before
			tt.change(&after)
			pid := b.sup.PID()
			b.SettingsChanged(before, after)
			if tt.ends {
				ends(t)
				b.bg.Wait()
				if restarted := b.sup.PID() != pid; restarted != tt.restarts {
					t.Errorf("engine child %d before, %d after: restarted %v, want %v", pid, b.sup.PID(), restarted, tt.restarts)
				}
				return
			}
			b.bg.Wait() // nothing was started to end it
			if !workerMaps() {
				t.Error("the kept job ended on a change that leaves it usable")
			}
			if err := b.sup.EndRingJob(context.Background()); err != nil {
				t.Fatal(err)
			}
			ends(t)
		})
	}

	t.Run("contributing turned off on the head", func(t *testing.T) {
		n := testNode(t, log)
		b := keptChat(t)
		b.watchContribute(n)
		if err := n.SetContribute(true); err != nil {
			t.Fatal(err)
		}
		if err := n.SetContribute(false); err != nil {
			t.Fatal(err)
		}
		ends(t)
	})

	t.Run("the agent quits", func(t *testing.T) {
		b := keptChat(t)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		ends(t)
	})
}

// deviceID makes an identity in dir and returns its device ID.
func mustID(t *testing.T, s string) identity.DeviceID {
	t.Helper()
	id, err := identity.ParseDeviceID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func deviceID(t *testing.T, dir string) string {
	t.Helper()
	id, err := identity.LoadOrCreate(dir, time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id.ID.String()
}

// testNode is a node on a fresh config directory that is never run: no
// network, only its settings and events.
func testNode(t *testing.T, log *slog.Logger) *node.Node {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.LinkPort = 0
	id, err := identity.LoadOrCreate(dir, time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return node.New(node.Options{Dir: dir, Config: cfg, Identity: id, App: "test", Hostname: "box", Log: log,
		Now: time.Now, Random: rand.Reader, Run: "r", Interfaces: func(string) ([]mdns.Iface, error) { return nil, nil }})
}
