//go:build linux

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"syscall"

	"homering/engine/profile/calib"
	"homering/halda"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: profilebench decode|calibrate|evict [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "table":
		err = table(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "decode":
		err = decode(os.Args[2:])
	case "calibrate":
		err = calibrate(os.Args[2:])
	case "evict":
		err = evict(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profilebench:", err)
		os.Exit(1)
	}
}

type samples struct {
	Ms       []float64 `json:"ms"`
	MedianMs float64   `json:"median_ms"`
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// decode evaluates a short prompt, then tokens one at a time, timing each
// decode step (the whole model is one window: its time is this device's
// per-token compute time, page faults included). The first two steps are
// warm-up and not reported.
func decode(args []string) error {
	fs := flag.NewFlagSet("decode", flag.ExitOnError)
	model := fs.String("model", "", "GGUF")
	threads := fs.Int("threads", 1, "threads")
	tokens := fs.Int("tokens", 8, "decode steps to report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ms, _, _, err := decodeSamples(*model, *threads, *tokens, 2)
	if err != nil {
		return err
	}
	out := samples{Ms: ms, MedianMs: median(ms)}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// calibrate feeds the samples to a Calibrator and applies it to the device
// against the plan's prediction for it.
func calibrate(args []string) error {
	fs := flag.NewFlagSet("calibrate", flag.ExitOnError)
	devPath := fs.String("device", "", "device JSON (homering profile --json)")
	planPath := fs.String("plan", "", "plan JSON (homering plan --json)")
	samplesPath := fs.String("samples", "", "decode samples JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var d halda.Device
	var p halda.Plan
	var s samples
	for _, r := range []struct {
		path string
		v    any
	}{{*devPath, &d}, {*planPath, &p}, {*samplesPath, &s}} {
		if err := readJSON(r.path, r.v); err != nil {
			return err
		}
	}
	var a halda.Assignment
	for _, r := range p.Ring {
		if r.Device == d.Name {
			a = r
		}
	}
	var c calib.Calibrator
	for _, ms := range s.Ms {
		c.Compute(ms / 1e3)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(c.Apply(d, a))
}

// evict drops the model's clean pages from the page cache, so that the next
// run reads it from disk.
func evict(args []string) error {
	fs := flag.NewFlagSet("evict", flag.ExitOnError)
	model := fs.String("model", "", "file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*model)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4, 0, 0); e != 0 {
		return e
	}
	return nil
}
