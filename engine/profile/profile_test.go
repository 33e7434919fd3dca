package profile

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/identity"
	"homering/engine/gguf"
	"homering/engine/ring/transport"
	"homering/halda"
	"homering/halda/lpsolve"
	"homering/internal/testlog"
)

const smallModel = "../../testdata/models/llama-Q4_K.gguf"

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testlog.Writer(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// quick keeps the real measurement short for CI.
func quick(model string) Options {
	return Options{Model: model, Threads: 1, MatmulTime: 20 * time.Millisecond,
		Disk: sysDiskQuick, FaultBytes: 24 << 20}
}

func TestMeasureRealModel(t *testing.T) {
	p, err := Measure(context.Background(), quick(smallModel), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.validate(); err != nil {
		t.Fatalf("measured profile is invalid: %v", err)
	}
	for _, k := range []string{"f32", "f16", "q4_0", "q8_0", "q4_k", "q5_k", "q6_k"} {
		if p.CPUFlops[k] <= 0 {
			t.Errorf("CPUFlops[%s] = %v, want > 0", k, p.CPUFlops[k])
		}
	}
	if p.Memory.Available <= 0 || p.Disk.Path == "" || !strings.HasPrefix(p.Key, p.Fingerprint+"-") {
		t.Errorf("profile lacks memory, disk or key: %+v", p)
	}
	// On Linux the page-fault throughput is measured (here on a scratch
	// file next to the model, which is too small to time) and handed on.
	if runtime.GOOS == "linux" && (p.Disk.FaultBytesPerSec <= 0 || !p.Disk.FaultScratch) {
		t.Errorf("no page-fault throughput from a scratch file: %+v", p.Disk)
	}
	// Its device entry is a valid Halda device: a plan comes out.
	d := p.Device("me")
	if d.DiskFaultBytesPerSec != p.Disk.FaultBytesPerSec {
		t.Errorf("Device dropped the page-fault throughput: %v, want %v", d.DiskFaultBytesPerSec, p.Disk.FaultBytesPerSec)
	}
	prob := halda.Problem{Devices: []halda.Device{d}, Model: halda.Model{
		Layers: 2, LayerBytes: map[string]int64{"q4_k": 1 << 20}, LayerFlops: map[string]float64{"q4_k": 1e6},
		Vocab: 100, KVBytesPerToken: 64, ContextTokens: 16,
	}}
	plan, err := halda.Solve(prob, lpsolve.Solver{})
	if err != nil || plan.PredictedMs <= 0 {
		t.Fatalf("Solve with the measured device: %v, %+v", err, plan)
	}
}

func TestLayerShapes(t *testing.T) {
	layer, out, err := LayerShapes(smallModel)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range layer {
		n += s.Count
	}
	// q, k, v, o, gate, up, down.
	if n != 7 || out == nil {
		t.Errorf("LayerShapes = %+v, output %v; want 7 matrices and an output", layer, out)
	}
	if _, _, err := LayerShapes(filepath.Join(t.TempDir(), "none.gguf")); err == nil {
		t.Error("LayerShapes(missing file) succeeded")
	}
}

// fakeMeasure returns a fixed valid profile for key and counts calls.
type fakeMeasure struct {
	mu    sync.Mutex
	calls int
	c     *Cache
}

func (f *fakeMeasure) measure(_ context.Context, o Options, _ *slog.Logger) (Profile, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	k, err := f.c.keyFor(o)
	if err != nil {
		return Profile{}, err
	}
	return Profile{Version: Version, Key: k, Threads: 1, MeasuredAt: f.c.now(),
		CPUFlops: map[string]float64{"q4_k": 1e10}, CPUReadBytesPerSec: 1e10, MemReadBytesPerSec: 1e10,
		Disk: sysDiskFake}, nil
}

func (f *fakeMeasure) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func TestCacheEntries(t *testing.T) {
	o := Options{Threads: 1}
	corruptions := []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"not JSON", func([]byte) []byte { return []byte("\x00\x01garbage") }},
		{"a digit changed (checksum fails)", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), "10000000000", "90000000000", 1))
		}},
		{"empty", func([]byte) []byte { return nil }},
	}
	for _, tt := range corruptions {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(t.TempDir(), testLog(t))
			f := &fakeMeasure{c: c}
			c.measure = f.measure
			if _, fresh, err := c.Get(context.Background(), o); err != nil || !fresh {
				t.Fatalf("first Get: fresh=%v err=%v", fresh, err)
			}
			if _, fresh, err := c.Get(context.Background(), o); err != nil || fresh {
				t.Fatalf("second Get was not served from the cache: fresh=%v err=%v", fresh, err)
			}
			k, _ := c.keyFor(o)
			b, err := os.ReadFile(c.path(k))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.path(k), tt.edit(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := c.load(k); !errors.Is(err, ErrCacheEntry) {
				t.Errorf("load of a corrupt entry = %v, want ErrCacheEntry", err)
			}
			p, fresh, err := c.Get(context.Background(), o)
			if err != nil || !fresh || f.count() != 2 {
				t.Fatalf("Get after corruption: fresh=%v calls=%d err=%v; want a new measurement", fresh, f.count(), err)
			}
			if p.CPUFlops["q4_k"] != 1e10 {
				t.Errorf("re-measured profile = %+v", p)
			}
			if _, err := c.load(k); err != nil {
				t.Errorf("the re-measured entry was not stored: %v", err)
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		c := NewCache(t.TempDir(), testLog(t))
		f := &fakeMeasure{c: c}
		c.measure = f.measure
		k, _ := c.keyFor(o)
		// A directory where the file should be cannot be read as one.
		if err := os.MkdirAll(c.path(k), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, fresh, err := c.Get(context.Background(), o); err != nil || !fresh {
			t.Fatalf("Get with an unreadable entry: fresh=%v err=%v; want a measurement", fresh, err)
		}
	})
	t.Run("invalid values are not trusted", func(t *testing.T) {
		c := NewCache(t.TempDir(), testLog(t))
		k, _ := c.keyFor(o)
		bad := Profile{Version: Version, Key: k, Threads: 1, CPUFlops: map[string]float64{"q4_k": -1},
			CPUReadBytesPerSec: 1, MemReadBytesPerSec: 1, Disk: sysDiskFake}
		if err := c.store(bad); err != nil {
			t.Fatal(err)
		}
		if _, err := c.load(k); !errors.Is(err, ErrCacheEntry) {
			t.Errorf("load of a negative rate = %v, want ErrCacheEntry", err)
		}
	})
	t.Run("stale entry is served and refreshed in the background", func(t *testing.T) {
		c := NewCache(t.TempDir(), testLog(t))
		f := &fakeMeasure{c: c}
		c.measure = f.measure
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		c.now = func() time.Time { return now }
		if _, _, err := c.Get(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		now = now.Add(DefaultMaxAge + time.Hour)
		p, fresh, err := c.Get(context.Background(), o)
		if err != nil || fresh || p.MeasuredAt.After(now.Add(-DefaultMaxAge)) {
			t.Fatalf("stale Get: fresh=%v err=%v measured %v; want the old profile at once", fresh, err, p.MeasuredAt)
		}
		c.Wait()
		if f.count() != 2 {
			t.Errorf("measure calls = %d, want 2 (one background refresh)", f.count())
		}
		k, _ := c.keyFor(o)
		q, err := c.load(k)
		if err != nil || !q.MeasuredAt.Equal(now) {
			t.Errorf("refreshed entry: %v, measured %v; want %v", err, q.MeasuredAt, now)
		}
	})
}

func TestMeasureLinkOverTransport(t *testing.T) {
	ctx, c := echoLink(t, t.TempDir)
	l, err := MeasureLink(ctx, c, "srv", LinkOptions{HiddenBytes: 4 * 2048})
	if err != nil {
		t.Fatal(err)
	}
	if l.RTTSec <= 0 || l.HiddenRTTSec <= 0 || l.BytesPerSec <= 0 || l.SendSec < l.RTTSec/2 || l.HiddenBytes != 8192 {
		t.Errorf("MeasureLink = %+v", l)
	}
	t.Logf("loopback TLS websocket: RTT %.0f µs, %d B in %.0f µs, %.1f MB/s", l.RTTSec*1e6, l.HiddenBytes, l.HiddenRTTSec*1e6, l.BytesPerSec/1e6)
}

// echoLink dials a link over loopback (the real transport) to a server that
// answers pings as app/node does; dir gives each identity its directory.
// The link and the server end with the test.
func echoLink(t *testing.T, dir func() string) (context.Context, *transport.Conn) {
	t.Helper()
	mk := func(name string) (*identity.Identity, *transport.Endpoint) {
		id, err := identity.LoadOrCreate(dir(), time.Now(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return id, transport.New(transport.Config{
			Identity:  id,
			Hello:     func() transport.Hello { return transport.Hello{ProtoMin: 1, ProtoMax: 1, App: "test", Name: name} },
			Authorize: func(identity.DeviceID) transport.Decision { return transport.AllowLink },
			Log:       testLog(t),
		})
	}
	srvID, srv := mk("srv")
	_, cli := mk("cli")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, ln, func(_ context.Context, c *transport.Conn) {
			defer c.Close()
			for {
				f, err := c.Recv()
				if err != nil {
					return
				}
				if f.Type == transport.MsgPing { // as app/node answers
					if c.Send(transport.Frame{Type: transport.MsgPong, Payload: f.Payload}) != nil {
						return // the link is gone
					}
				}
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	c, err := cli.Dial(ctx, ln.Addr().String(), srvID.ID, transport.PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // before the server's cleanup: cleanups run last first
	return ctx, c
}

func TestLoadCached(t *testing.T) {
	cfg := t.TempDir()
	dir := filepath.Join(cfg, CacheDirName)
	if _, ok, err := LoadCached(cfg); err != nil || ok {
		t.Fatalf("LoadCached of an empty config dir: ok=%v err=%v; want not ok, no error", ok, err)
	}
	c := NewCache(dir, testLog(t))
	f := &fakeMeasure{c: c}
	c.measure = f.measure
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return t0 }
	if _, _, err := c.Get(context.Background(), Options{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return t0.Add(time.Hour) }
	if _, _, err := c.Get(context.Background(), Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	// Another machine's entry, valid in itself, newer still: not this device.
	other := Profile{Version: Version, Key: "OTHERMACHINE-0000", Threads: 1, MeasuredAt: t0.Add(2 * time.Hour),
		CPUFlops: map[string]float64{"q4_k": 1}, CPUReadBytesPerSec: 1, MemReadBytesPerSec: 1, Disk: sysDiskFake}
	if err := c.store(other); err != nil {
		t.Fatal(err)
	}
	if f.count() != 2 {
		t.Fatalf("measure calls = %d, want 2", f.count())
	}
	p, ok, err := LoadCached(cfg)
	if err != nil || !ok {
		t.Fatalf("LoadCached: ok=%v err=%v; want this device's newest entry", ok, err)
	}
	if p.MeasuredAt != t0.Add(time.Hour) || p.Memory.Total <= 0 {
		t.Errorf("LoadCached = measured %v, memory %+v; want the 2-thread entry of %v with fresh memory", p.MeasuredAt, p.Memory, t0.Add(time.Hour))
	}
	if f.count() != 2 {
		t.Errorf("LoadCached measured: calls = %d, want still 2", f.count())
	}
	// Corrupt the newest entry: the older one is served, the corrupt one
	// never; with both corrupt there is no profile.
	k1, _ := c.keyFor(Options{Threads: 1})
	k2, _ := c.keyFor(Options{Threads: 2})
	if err := os.WriteFile(c.path(k2), []byte(`{"sha256":"00","profile":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := LoadCached(cfg); err != nil || !ok || p.MeasuredAt != t0 {
		t.Errorf("LoadCached with the newest entry corrupt: ok=%v err=%v measured %v; want the older entry", ok, err, p.MeasuredAt)
	}
	if err := os.WriteFile(c.path(k1), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LoadCached(cfg); err != nil || ok {
		t.Errorf("LoadCached with every entry corrupt: ok=%v err=%v; want not ok, no error", ok, err)
	}
	if f.count() != 2 {
		t.Errorf("LoadCached measured: calls = %d, want still 2", f.count())
	}
}

// TestWeightTypes (in ggml order): a mixed file's types beyond its first layer (Q4_K_M puts
// Q6_K in layers 2 and 3 of 4; with 8 experts Q8_0 and Q5_K in attention),
// the head's, and the F32 router; a tied head is token_embd.
func TestWeightTypes(t *testing.T) {
	tests := []struct {
		model string
		want  []gguf.Type
	}{
		{"llama-Q4_K.gguf", []gguf.Type{gguf.TypeQ4_K}},
		{"llama-Q4_K_M.gguf", []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K}},
		{"gemma3-Q4_K_M.gguf", []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K}},
		{"qwen3moe-Q4_K_M.gguf", []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}},
		{"qwen3moe-MXFP4_MOE.gguf", []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeMXFP4}},
		{"llama-IQ1_S.gguf", []gguf.Type{gguf.TypeIQ1_S}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			got, err := WeightTypes(filepath.Join("../../testdata/models", tt.model))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("WeightTypes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMeasureRatesEveryType: the profile of a model rates every weight type
// it holds, the i-quants and MXFP4 (not among the required types) included,
// and ModelTypes asks for them.
func TestMeasureRatesEveryType(t *testing.T) {
	for model, typ := range map[string]string{"llama-IQ1_S.gguf": "iq1_s", "llama-IQ2_XS.gguf": "iq2_xs",
		"llama-IQ3_S.gguf": "iq3_s", "qwen3moe-MXFP4_MOE.gguf": "mxfp4"} {
		t.Run(model, func(t *testing.T) {
			path := filepath.Join("../../testdata/models", model)
			p, err := Measure(context.Background(), quick(path), testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			types, err := ModelTypes(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(types, typ) {
				t.Errorf("ModelTypes = %v, lacks %s", types, typ)
			}
			for _, k := range types {
				if !(p.CPUFlops[k] > 0) {
					t.Errorf("CPUFlops[%s] = %v, want > 0", k, p.CPUFlops[k])
				}
			}
			t.Logf("%s: CPU FLOPS %v", model, p.CPUFlops)
		})
	}
}
