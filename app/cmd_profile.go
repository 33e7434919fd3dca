package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"homering/app/config"
	"homering/engine/profile"
	"homering/engine/runner"
	"homering/halda"
)

const profileUsage = `Usage: homering profile [--model FILE.gguf] [--json] [flags]

Measures this device for Halda: CPU FLOPS per weight type with ggml's own
kernels (at the model's layer shapes with --model), memory read throughput,
RAM and swap (and a cgroup limit), GPUs, disk read throughput on the model's
disk, OS and backends; with --model also the model's profile from its GGUF.
The measurement is cached in the config directory per hardware and refreshed
in the background when old; --fresh measures again now.

--json prints this device as one Halda device entry, so that
  homering profile --json > me.json
  homering plan --devices me.json,other.json --model FILE.gguf
work together.

Flags:
`

// cmdProfile is `homering profile`.
func cmdProfile(ctx context.Context, e env) int {
	fs := newFlags(e, "profile", profileUsage)
	model := fs.String("model", "", "measure at this GGUF's layer shapes and on its disk, and print its profile")
	asJSON := fs.Bool("json", false, "print the device as a Halda device entry (JSON)")
	threads := fs.Int("threads", runtime.NumCPU(), "CPU threads the windows will use")
	name := fs.String("name", "", "device name in the plan (default: the host name)")
	fresh := fs.Bool("fresh", false, "measure now instead of using the cached profile")
	ctxTokens := fs.Int("context", 0, "tokens of KV cache for the model profile (default: 4096 or the model's)")
	progress := fs.Bool("progress", false, "measure now at low priority, cache the result and print only one JSON line per step (the agent's background measurement)")
	matmulMs := fs.Int("matmul-ms", 0, "milliseconds spent timing each matrix shape (default 120)")
	faultMiB := fs.Int("fault-mib", 0, "MiB of the model read through page faults (default 288)")
	gpuDir := fs.String("gpu-dir", "", "load ggml GPU backend libraries from this directory (build/gpu-lib.sh) instead of HOMERING_GPU_DIR or the one beside this program; the first GPU is measured too (HOMERING_GPU=off or the gpu setting off: none)")
	stdinStop := fs.Bool("stop-on-stdin", false, "stop, removing the scratch files, when stdin ends or a line arrives on it (the agent's graceful stop, on every OS)")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	if fs.NArg() > 0 || *threads < 1 || *matmulMs < 0 || *faultMiB < 0 {
		fmt.Fprintln(e.stderr, "homering profile: unexpected arguments; give at most --model FILE and flags.")
		fs.Usage()
		return 2
	}
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "homering profile: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The runner child's one loader: the profile measures the GPUs the
	// engine will have.
	set, err := config.LoadSettings(dir)
	if err != nil {
		log.Warn("profile: settings unreadable; the GPU is used as by default", "err", err)
	}
	if g := runner.LoadGPU(runner.GPUOptions{Dir: *gpuDir, Off: err == nil && !set.UseGPU()}, nil); g.GPUs == 0 && (*gpuDir != "" || g.Dir != "") {
		fmt.Fprintf(e.stderr, "homering profile: %s; measuring the CPU alone.\n", g.Why)
	}
	opts := profile.Options{Model: *model, Threads: *threads, ScratchDir: os.TempDir(),
		MatmulTime: time.Duration(*matmulMs) * time.Millisecond, FaultBytes: int64(*faultMiB) << 20}
	var p profile.Profile
	cache := profile.NewCache(filepath.Join(dir, "profiles"), log)
	if *stdinStop {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go stopOnInput(e.stdin, cancel)
	}
	if *progress {
		return profileProgress(ctx, e, cache, opts, log)
	}
	if *fresh {
		p, err = profile.Measure(ctx, opts, log)
		if err == nil {
			err = cache.Store(p)
		}
	} else {
		p, _, err = cache.Get(ctx, opts)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "homering profile: %v\n", err)
		return 1
	}
	// A stale entry is refreshed in the background; a command must not exit
	// in the middle of writing it.
	defer cache.Wait()
	dev := p.Device(*name)
	if *asJSON {
		return reportJSON(e, "profile", dev)
	}
	printProfile(e.stdout, p, dev)
	if *model != "" {
		m, err := modelFromGGUF(*model, *ctxTokens)
		if err != nil {
			fmt.Fprintf(e.stderr, "homering profile: %v\n", err)
			return 1
		}
		fmt.Fprintln(e.stdout)
		printModelProfile(e.stdout, m)
	}
	return 0
}

// profileProgress is `homering profile --progress`, the child the agent
// starts to measure this device in the background (app/agent/profile_bg.go): it
// lowers its priority, prints each step as one JSON line (profile.Step),
// caches the profile and exits. The agent starts it with --stop-on-stdin and
// stops it (a chat started) by closing its stdin, on every OS (Windows has
// no SIGTERM): it ends at the next step and removes its scratch files.
func profileProgress(ctx context.Context, e env, cache *profile.Cache, opts profile.Options, log *slog.Logger) int {
	if err := runner.LowerPriority(); err != nil {
		log.Warn("profile: could not lower the priority; measuring at normal priority", "err", err)
	}
	enc := json.NewEncoder(e.stdout)
	opts.Progress = func(s profile.Step) { _ = enc.Encode(s) } // progress to the terminal, as fmt.Fprint
	p, err := profile.Measure(ctx, opts, log)
	if err == nil {
		err = cache.Store(p)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "homering profile: %v\n", err)
		return 1
	}
	return 0
}

// stopOnInput calls stop when r ends (EOF or an error: the agent closed the
// pipe or died) or yields a line.
func stopOnInput(r io.Reader, stop func()) {
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if err != nil || (n == 1 && b[0] == '\n') {
			stop()
			return
		}
	}
}

func gb(v float64) string { return fmt.Sprintf("%.2f GB/s", v/1e9) }

func bytesStr(v int64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(v)/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
	}
	return fmt.Sprintf("%d B", v)
}

func printProfile(w io.Writer, p profile.Profile, d halda.Device) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "device\t%s (%s/%s, %s)\n", d.Name, p.OS, p.Arch, p.CPU)
	fmt.Fprintf(tw, "cpus\t%d, profiled with %d thread(s)\n", p.CPUs, p.Threads)
	fmt.Fprintf(tw, "backends\t%s\n", strings.Join(p.Backends, ", "))
	if p.CPUVariant != "" {
		fmt.Fprintf(tw, "cpu variant\t%s (ggml's CPU kernels, HOMERING_CPU forces one; our matrix kernels, HOMERING_KERNELS forces one)\n", p.CPUVariant)
	}
	for _, g := range p.GPUs {
		fmt.Fprintf(tw, "gpu\t%s (%s): %s free of %s\n", g.Name, g.Description, bytesStr(g.FreeBytes), bytesStr(g.TotalBytes))
	}
	if g := p.GPU; g != nil {
		fmt.Fprintf(tw, "gpu rates\t%s: memory read %s, hidden state in %.1f µs, out %.1f µs\n", g.Device, gb(g.ReadBytesPerSec), g.HostToGPUSec*1e6, g.GPUToHostSec*1e6)
		if pr := g.Probe; pr != nil {
			fmt.Fprintf(tw, "gpu layer probe\t%.3f ms per layer on the GPU (decode step)\n", pr.LayerSec*1e3)
		}
		for _, k := range sortedKeys(g.Flops) {
			fmt.Fprintf(tw, "gpu %s\t%.1f GFLOP/s (weights in cache)\n", k, g.Flops[k]/1e9)
		}
	}
	fmt.Fprintf(tw, "ram\t%s available of %s\n", bytesStr(p.Memory.Available), bytesStr(p.Memory.Total))
	if cg := p.Memory.Cgroup; cg != nil {
		fmt.Fprintf(tw, "cgroup\tv%d %s: limit %s, using %s (%s page cache)\n", cg.Version, cg.Path, bytesStr(cg.Limit), bytesStr(cg.Usage), bytesStr(cg.File))
	}
	fmt.Fprintf(tw, "swap\t%s free of %s\n", bytesStr(p.Memory.SwapFree), bytesStr(p.Memory.SwapTotal))
	fmt.Fprintf(tw, "memory read\t%s (weights through ggml's kernels), %s streaming\n", gb(p.CPUReadBytesPerSec), gb(p.MemReadBytesPerSec))
	if pr := p.Probe; pr != nil {
		fmt.Fprintf(tw, "layer probe\t%.2f ms per layer on the engine (decode step, %s of weights and KV)\n", pr.LayerSec*1e3, bytesStr(pr.LayerBytes))
	}
	fmt.Fprintf(tw, "disk (%s)\t%s sequential, %s random (64 KiB), page cache bypassed: %v\n", p.Disk.Path, gb(p.Disk.SeqBytesPerSec), gb(p.Disk.RandBytesPerSec), p.Disk.Uncached)
	if p.Disk.FaultBytesPerSec > 0 {
		where := "the model's layers"
		if p.Disk.FaultScratch {
			where = "a scratch file laid out like the model's layers"
		}
		fmt.Fprintf(tw, "page faults\t%s reading %s through a mapping in the engine's order (Halda pages at this rate)\n", gb(p.Disk.FaultBytesPerSec), where)
	}
	fmt.Fprintf(tw, "measured\t%s in %.1f s (key %s)\n", p.MeasuredAt.Format("2006-01-02 15:04:05 MST"), p.TookSec, p.Key)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSHAPE (k x rows)\tPER LAYER\tHOT ms\tCOLD ms\tGFLOPS")
	for _, m := range p.Matmuls {
		cold, per := "-", "-"
		if m.ColdSec > 0 {
			cold = fmt.Sprintf("%.3f", m.ColdSec*1e3)
			per = fmt.Sprint(m.Count)
		}
		fmt.Fprintf(tw, "%s\t%d x %d\t%s\t%.3f\t%s\t%.1f\n", m.TypeName, m.K, m.Rows, per, m.HotSec*1e3, cold, 2*float64(m.K)*float64(m.Rows)/m.HotSec/1e9)
	}
	tw.Flush()
	keys := make([]string, 0, len(p.CPUFlops))
	for k := range p.CPUFlops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, p.CPUFlops[k]/1e9))
	}
	fmt.Fprintf(w, "cpu GFLOPS (hot, per type): %s\n", strings.Join(parts, ", "))
}

func printModelProfile(w io.Writer, m halda.Model) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s: %d layers, embedding %d, vocabulary %d\n", m.Name, m.Layers, m.Embedding, m.Vocab)
	keys := make([]string, 0, len(m.LayerBytes))
	var total int64
	for k, v := range m.LayerBytes {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, bytesStr(m.LayerBytes[k])))
	}
	fmt.Fprintf(tw, "bytes per layer\t%s (%s)\n", bytesStr(total), strings.Join(parts, ", "))
	var fl float64
	for _, v := range m.LayerFlops {
		fl += v
	}
	fmt.Fprintf(tw, "FLOPs per layer per token\t%.3g (attention over %d tokens included)\n", fl, m.ContextTokens)
	fmt.Fprintf(tw, "input layer\t%s (one row of %s read per token)\n", bytesStr(m.InputBytes), bytesStr(m.InputBytes/int64(max(m.Vocab, 1))))
	fmt.Fprintf(tw, "output layer\t%s\n", bytesStr(m.OutputBytes))
	fmt.Fprintf(tw, "KV cache\t%d bytes per token per layer; planned for n_kv = %d tokens\n", m.KVBytesPerToken, m.ContextTokens)
	tw.Flush()
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
