package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	HeldOut    float64   `json:"held_out_ms"` // the last rep, not used for calibration
	DiskMs     float64   `json:"pred_disk_ms"`
	Case       string    `json:"case"`
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

func plan(bin, devFile, model string) (halda.Plan, error) {
	var p halda.Plan
	out, err := homering(bin, "plan", "--devices", devFile, "--model", model, "--context", "256", "--json")
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(out, &p)
}

// run: reps × (fresh `homering profile` → `homering plan` prediction, then
// a decode measurement); then calibration on all but the last rep's
// samples, checked against the last rep.
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	bin := fs.String("homering", "bench/out/homering", "homering binary")
	model := fs.String("model", "", "GGUF")
	threads := fs.Int("threads", 1, "threads")
	reps := fs.Int("reps", 3, "repetitions (≥ 2)")
	tokens := fs.Int("tokens", 8, "decode steps per rep")
	label := fs.String("label", "resident", "row label")
	evictEach := fs.Bool("evict", false, "drop the model from the page cache before each decode")
	dir := fs.String("dir", os.TempDir(), "work directory")
	fs.Parse(args)
	if *reps < 2 {
		return fmt.Errorf("-reps must be at least 2")
	}
	r := row{Label: *label, Model: filepath.Base(*model), Threads: *threads}
	var first halda.Plan
	var all [][]float64
	devFile := filepath.Join(*dir, fmt.Sprintf("dev-%s-%d.json", *label, *threads))
	for i := range *reps {
		t := time.Now()
		out, err := homering(*bin, "profile", "--model", *model, "--threads", fmt.Sprint(*threads), "--fresh", "--name", "me", "--json")
		if err != nil {
			return err
		}
		r.ProfileSec = append(r.ProfileSec, time.Since(t).Seconds())
		f := devFile
		if i > 0 {
			f = devFile + ".rep"
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return err
		}
		p, err := plan(*bin, f, *model)
		if err != nil {
			return err
		}
		if i == 0 {
			first = p
		}
		r.PredMs = append(r.PredMs, p.PredictedMs)
		if *evictEach {
			if err := evict([]string{"-model", *model}); err != nil {
				return err
			}
		}
		ms, err := decodeSamples(*model, *threads, *tokens)
		if err != nil {
			return err
		}
		all = append(all, ms)
		r.MeasMs = append(r.MeasMs, median(ms))
	}
	r.Before = median(r.PredMs)
	r.Measured = median(r.MeasMs)
	r.DiskMs = first.DiskMs
	if len(first.Ring) > 0 {
		r.Case = string(first.Ring[0].Case)
	}
	// Calibrate the first rep's device with every sample but the last
	// rep's, and check the recomputed prediction against the last rep.
	var d halda.Device
	if err := readJSON(devFile, &d); err != nil {
		return err
	}
	c := calib.Calibrator{ComputeWindow: 1 << 20}
	for _, ms := range all[:len(all)-1] {
		for _, v := range ms {
			c.Compute(v / 1e3)
		}
	}
	var a halda.Assignment
	for _, x := range first.Ring {
		if x.Device == d.Name {
			a = x
		}
	}
	cal, err := json.Marshal(c.Apply(d, a))
	if err != nil {
		return err
	}
	calFile := devFile + ".calibrated"
	if err := os.WriteFile(calFile, cal, 0o644); err != nil {
		return err
	}
	p, err := plan(*bin, calFile, *model)
	if err != nil {
		return err
	}
	r.After = p.PredictedMs
	r.HeldOut = r.MeasMs[len(r.MeasMs)-1]
	return json.NewEncoder(os.Stdout).Encode(r)
}

// decodeSamples is decode without the JSON: ms per decode step.
func decodeSamples(model string, threads, tokens int) ([]float64, error) {
	m, err := ggml.Open(model)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	info := m.Info()
	w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 256, Threads: threads})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	prompt := []int32{1, 15, 29, 300, 4000, 77, 123, 9}
	if _, err := w.EvalTokens(prompt, 0); err != nil {
		return nil, err
	}
	pos := len(prompt)
	var out []float64
	for i := range tokens + 2 {
		tok := int32(100 + 37*i%(info.NVocab-100))
		t := time.Now()
		if _, err := w.EvalTokens([]int32{tok}, pos); err != nil {
			return nil, err
		}
		if i >= 2 { // two warm-up steps
			out = append(out, float64(time.Since(t).Microseconds())/1e3)
		}
		pos++
	}
	return out, nil
}
