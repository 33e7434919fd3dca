//go:build linux

package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"homering/engine/ggml"
	"homering/engine/profile/calib"
	"homering/halda"
)

// row is one line of bench/profile.sh's table.
type row struct {
	Label      string    `json:"label"`
	Model      string    `json:"model"`
	Threads    int       `json:"threads"`
	ProfileSec []float64 `json:"profile_s"`
	PredMs     []float64 `json:"predicted_ms"` // per rep, fresh profile each
	MeasMs     []float64 `json:"measured_ms"`  // per rep, median of its tokens
	Before     float64   `json:"pred_before_ms"`
	Measured   float64   `json:"measured_median_ms"`
	After      float64   `json:"pred_after_ms"`
	HeldOut    float64   `json:"held_out_ms"` // median of the held-out runs' tokens, not used for calibration
	DiskMs     float64   `json:"pred_disk_ms"`
	FaultBps   float64   `json:"fault_bytes_per_s,omitempty"`
	SeqBps     float64   `json:"seq_bytes_per_s,omitempty"`
	Case       string    `json:"case"`
	// ReadMB is, per rep, the MB read from disk per timed decode step
	// (/proc/self/io read_bytes: page faults included).
	ReadMB []float64 `json:"read_mb_per_token,omitempty"`
	// RoutedMs is, per rep, the prediction with the routing histogram its
	// prompt and warm-up steps measured (homering plan --routing).
	RoutedMs []float64 `json:"predicted_routed_ms,omitempty"`
	// NoPlan lists the reps whose profile Halda found no plan for (a disk
	// probe slowed below its paging threshold by other I/O), left out.
	NoPlan []string `json:"no_plan,omitempty"`
}

func homering(bin string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %v: %w: %s", bin, args, err, stderr.String())
	}
	return out, nil
}

func plan(bin, devFile, model string, extra ...string) (halda.Plan, error) {
	var p halda.Plan
	args := append([]string{"plan", "--devices", devFile, "--model", model, "--context", "256", "--rounds", "1", "--json"}, extra...)
	out, err := homering(bin, args...)
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(out, &p)
}

// config is one row being measured.
type config struct {
	model   string
	threads int
	r       row
	devs    []halda.Device // per rep
	plans   []halda.Plan   // per rep
	tokens  [][]float64    // per rep: ms per decode step (calibration run)
	held    [][]float64    // per rep: ms per decode step (held-out run)
}

// run measures every model × thread count, rep by rep: in each rep every
// configuration gets a fresh `homering profile` → `homering plan`
// prediction and then a decode measurement, so a slow spell of the shared
// machine hits all rows alike instead of one row's reps. Each rep decodes
// 2 × tokens steps; they alternate between calibration and held out. Then
// calibration as the agent does it: ratios of the calibration steps to the
// prediction of one profile (the agent calibrates against its cached
// profile; here the median rep's stands for it) calibrate that profile
// (calib.Ratio, FromRatios), and the recomputed prediction is checked
// against the held-out steps (median). Held-out steps between calibration
// steps keep the shared machine's changes of speed out of the error: an
// even/odd split of reps, minutes apart, measured a 15% change mid-run
// rather than calibration, and two runs back to back, seconds apart, still
// differed by up to ±14% (six such pairs after a profile, 2 threads: no
// side was faster in general) -- the VM's noise, which the ±5% target
// cannot be told apart from. The agent, too, predicts the next step from
// the steps just before it (rolling medians).
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	bin := fs.String("homering", "bench/out/homering", "homering binary")
	models := fs.String("model", "", "GGUF files, comma-separated")
	threadList := fs.String("threads", "1", "thread counts, comma-separated")
	reps := fs.Int("reps", 4, "repetitions (≥ 2)")
	tokens := fs.Int("tokens", 8, "decode steps per rep")
	label := fs.String("label", "resident", "row label")
	evictEach := fs.Bool("evict", false, "drop the model from the page cache before each decode")
	warmup := fs.Int("warmup", 2, "untimed decode steps before the timed ones (a MoE model's hot set pages in over several)")
	dir := fs.String("dir", os.TempDir(), "work directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reps < 2 {
		return fmt.Errorf("-reps must be at least 2")
	}
	var cfgs []*config
	for _, m := range strings.Split(*models, ",") {
		for _, ts := range strings.Split(*threadList, ",") {
			t, err := strconv.Atoi(ts)
			if err != nil || t < 1 {
				return fmt.Errorf("-threads: %q is not a thread count", ts)
			}
			cfgs = append(cfgs, &config{model: m, threads: t, r: row{Label: *label, Model: filepath.Base(m), Threads: t}})
		}
	}
	for rep := range *reps {
		for ci, c := range cfgs {
			t := time.Now()
			out, err := homering(*bin, "profile", "--model", c.model, "--threads", fmt.Sprint(c.threads), "--fresh", "--name", "me", "--json")
			if err != nil {
				return err
			}
			c.r.ProfileSec = append(c.r.ProfileSec, time.Since(t).Seconds())
			devFile := filepath.Join(*dir, fmt.Sprintf("dev-%s-%d-%d.json", *label, ci, rep))
			if err := os.WriteFile(devFile, out, 0o644); err != nil {
				return err
			}
			var d halda.Device
			if err := json.Unmarshal(out, &d); err != nil {
				return err
			}
			p, err := plan(*bin, devFile, c.model)
			if err != nil {
				// One rep's profile, not the bench, is at fault: say so
				// and go on; a row with no plan at all fails below.
				c.r.NoPlan = append(c.r.NoPlan, fmt.Sprintf("rep %d (disk %.0f MB/s page faults, %.0f MB/s sequential): %v",
					rep, d.DiskFaultBytesPerSec/1e6, d.DiskSeqBytesPerSec/1e6, err))
				continue
			}
			c.devs, c.plans = append(c.devs, d), append(c.plans, p)
			c.r.PredMs = append(c.r.PredMs, p.PredictedMs)
			if *evictEach {
				if err := evict([]string{"-model", c.model}); err != nil {
					return err
				}
			}
			all, readMB, counts, err := decodeSamples(c.model, c.threads, 2**tokens, *warmup)
			if err != nil {
				return err
			}
			c.r.ReadMB = append(c.r.ReadMB, readMB)
			if counts != nil {
				rf := filepath.Join(*dir, fmt.Sprintf("routing-%s-%d-%d.json", *label, ci, rep))
				b, err := json.Marshal(map[string]any{"counts": counts})
				if err != nil {
					return err
				}
				if err := os.WriteFile(rf, b, 0o644); err != nil {
					return err
				}
				rp, err := plan(*bin, devFile, c.model, "--routing", rf)
				if err != nil {
					return err
				}
				c.r.RoutedMs = append(c.r.RoutedMs, rp.PredictedMs)
			}
			ms, held := alternate(all)
			c.tokens, c.held = append(c.tokens, ms), append(c.held, held)
			c.r.MeasMs = append(c.r.MeasMs, median(all))
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for ci, c := range cfgs {
		r := &c.r
		if len(c.plans) == 0 {
			return fmt.Errorf("%s, %d thread(s): no rep had a plan: %s", r.Model, r.Threads, strings.Join(r.NoPlan, "; "))
		}
		r.Before = median(r.PredMs)
		r.Measured = median(r.MeasMs)
		// The rep whose prediction is the median stands for the profile.
		mid := medianIndex(r.PredMs)
		first := c.plans[mid]
		r.DiskMs = first.DiskMs
		r.FaultBps, r.SeqBps = c.devs[mid].DiskFaultBytesPerSec, c.devs[mid].DiskSeqBytesPerSec
		if len(first.Ring) > 0 {
			r.Case = string(first.Ring[0].Case)
		}
		// Calibration as the agent does it (app/agent/profile_calib.go), one
		// ratio per token: every calibration run's tokens over the
		// prediction of the median rep's profile; their median calibrates
		// that profile (a stalled token or rep is outvoted).
		dev := c.devs[mid]
		a := assignment(first, dev.Name)
		var ratios, held []float64
		for i, ms := range c.tokens {
			held = append(held, c.held[i]...)
			for _, v := range ms {
				if r, ok := calib.Ratio(v, a.ComputeMs+a.DiskMs); ok {
					ratios = append(ratios, r)
				}
			}
		}
		if cal, ok := calib.FromRatios(first, map[string][]float64{dev.Name: ratios})[dev.Name]; ok {
			dev = cal.Apply(dev, assignment(first, dev.Name))
		}
		b, err := json.Marshal(dev)
		if err != nil {
			return err
		}
		calFile := filepath.Join(*dir, fmt.Sprintf("dev-%s-%d.calibrated.json", *label, ci))
		if err := os.WriteFile(calFile, b, 0o644); err != nil {
			return err
		}
		p, err := plan(*bin, calFile, c.model)
		if err != nil {
			return err
		}
		r.After = p.PredictedMs
		r.HeldOut = median(held)
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// alternate splits a run's decode steps into the calibration steps (the
// 1st, 3rd, ...) and the held-out ones between them.
func alternate(steps []float64) (calibration, heldOut []float64) {
	for i, v := range steps {
		if i%2 == 0 {
			calibration = append(calibration, v)
		} else {
			heldOut = append(heldOut, v)
		}
	}
	return calibration, heldOut
}

// assignment is device's part of plan (zero when it has none).
func assignment(plan halda.Plan, device string) halda.Assignment {
	for _, a := range plan.Ring {
		if a.Device == device {
			return a
		}
	}
	return halda.Assignment{}
}

// medianIndex is the index of v's median element (the lower one for an
// even count).
func medianIndex(v []float64) int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	return idx[(len(idx)-1)/2]
}

// decodeSamples is decode without the JSON: ms per timed decode step, after
// warmup untimed ones, the MB read from disk per timed step and, for a MoE
// model, the routers' picks over the prompt and warm-up steps (counting is
// off while timed).
func decodeSamples(model string, threads, tokens, warmup int) ([]float64, float64, [][]int64, error) {
	m, err := ggml.Open(model)
	if err != nil {
		return nil, 0, nil, err
	}
	defer m.Close()
	info := m.Info()
	w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 256, Threads: threads})
	if err != nil {
		return nil, 0, nil, err
	}
	defer w.Close()
	if info.NExpert > 0 {
		if err := w.CountExperts(true); err != nil {
			return nil, 0, nil, err
		}
	}
	prompt := []int32{1, 15, 29, 300, 4000, 77, 123, 9}
	if _, err := w.EvalTokens(prompt, 0); err != nil {
		return nil, 0, nil, err
	}
	pos := len(prompt)
	var out []float64
	var read0 int64
	var counts [][]int64
	for i := range tokens + warmup {
		if i == warmup {
			if info.NExpert > 0 {
				counts = w.ExpertCounts()
				if err := w.CountExperts(false); err != nil {
					return nil, 0, nil, err
				}
			}
			if read0, err = readBytes(); err != nil {
				return nil, 0, nil, err
			}
		}
		tok := int32(100 + 37*i%(info.NVocab-100))
		t := time.Now()
		if _, err := w.EvalTokens([]int32{tok}, pos); err != nil {
			return nil, 0, nil, err
		}
		if i >= warmup {
			out = append(out, float64(time.Since(t).Microseconds())/1e3)
		}
		pos++
	}
	read1, err := readBytes()
	if err != nil {
		return nil, 0, nil, err
	}
	return out, float64(read1-read0) / 1e6 / float64(max(tokens, 1)), counts, nil
}

// readBytes is this process's read_bytes from /proc/self/io: what it had
// read from storage, page faults on the mapping included.
func readBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/io has no read_bytes line")
}
