//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// table reads rows (JSON lines) from stdin and prints bench/profile.sh's
// table: predicted vs measured with the error, before and after
// calibration, and the target each row is held to.
func table(args []string) error {
	var rows []row
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("row %q: %w", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tmodel\tthreads\tprofile s\tpredicted ms\tmeasured ms\tspread\terror\ttarget\tcalibrated ms\theld-out ms\terror\ttarget\t")
	for _, r := range rows {
		before, after := "±15%", "±5%"
		switch {
		case strings.HasPrefix(r.Label, "moe"): // issue 20 item 4
			before, after = "±25%", "±10%"
		case r.Label != "resident":
			before, after = "±25%", "-"
		}
		fmt.Fprintf(tw, "%s (%s)\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.0f%%\t%+.1f%%\t%s\t%.1f\t%.1f\t%+.1f%%\t%s\t\n",
			r.Label, r.Case, r.Model, r.Threads, median(r.ProfileSec), r.Before, r.Measured, spread(r.MeasMs), pct(r.Before, r.Measured), before,
			r.After, r.HeldOut, pct(r.After, r.HeldOut), after)
	}
	tw.Flush()
	fmt.Println("spread: (slowest − fastest rep) / median of the measured reps, the machine's noise during the row.")
	fmt.Println("paired: median over reps of each rep's prediction vs its own decode, measured seconds apart.")
	for _, r := range rows {
		var errs []float64
		for i := range min(len(r.PredMs), len(r.MeasMs)) {
			errs = append(errs, pct(r.PredMs[i], r.MeasMs[i]))
		}
		if len(errs) > 0 {
			fmt.Printf("paired error %s %s t=%d: %+.1f%% (per rep %v)\n", r.Label, r.Model, r.Threads, median(errs), round1(errs))
		}
	}
	for _, r := range rows {
		fmt.Printf("%s %s t=%d: predicted per rep %v ms, measured per rep %v ms", r.Label, r.Model, r.Threads, round1(r.PredMs), round1(r.MeasMs))
		if r.DiskMs > 0 {
			fmt.Printf("; predicted disk %.1f ms at %.0f MB/s page faults (O_DIRECT sequential %.0f MB/s)", r.DiskMs, r.FaultBps/1e6, r.SeqBps/1e6)
		}
		if len(r.ReadMB) > 0 {
			fmt.Printf("; read from disk per token %v MB", round1(r.ReadMB))
		}
		if len(r.RoutedMs) > 0 {
			fmt.Printf("; predicted with the measured routing per rep %v ms (median %.1f, %+.1f%%)",
				round1(r.RoutedMs), median(r.RoutedMs), pct(median(r.RoutedMs), r.Measured))
		}
		fmt.Println()
		for _, why := range r.NoPlan {
			fmt.Printf("  left out, no plan for its profile: %s\n", why)
		}
	}
	return nil
}

// spread is (max − min) / median in percent.
func spread(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return (slices.Max(v) - slices.Min(v)) / median(v) * 100
}

func pct(pred, meas float64) float64 { return (pred - meas) / meas * 100 }

func round1(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*10+0.5)) / 10
	}
	return out
}
