//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"homering/app/api/apitype"
)

// Targets of issue 8 item 8, printed next to what was measured.
const (
	targetSpeedup  = 5.0
	targetPressure = 0.06
)

func table(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	var baselines []string
	fs.Func("baseline", "case name the ratios are to; repeat it for several runs of the baseline (ratios are to the median of their times)", func(s string) error {
		baselines = append(baselines, s)
		return nil
	})
	target := fs.String("target", "", "case name the targets apply to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("need the results file")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
		rows = append(rows, r)
	}
	// The baseline is the median of its runs: llama.cpp alone swings by
	// 1.5x between runs on a shared machine, and one noisy run must not
	// decide the verdict.
	var bases []Row
	for _, name := range baselines {
		for _, r := range rows {
			if r.Case == name && r.NA == "" && r.Timing.TPOTMs > 0 && r.Timing.TTFTMs > 0 {
				bases = append(bases, r)
			}
		}
	}
	var baseTPOT, baseTTFT float64
	if len(bases) > 0 {
		var tp, tt []float64
		for _, b := range bases {
			tp, tt = append(tp, b.Timing.TPOTMs), append(tt, b.Timing.TTFTMs)
		}
		baseTPOT, baseTTFT = median(tp), median(tt)
	}
	vs := "vs (a)"
	if len(bases) > 1 {
		vs = "vs median (a)"
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "case\tTTFT ms\tTPOT ms\tspeed-up %s\tTTFT %s\tpressure per device\tpeak usage/cap\tOOM kills\ttokens\n", vs, vs)
	for _, r := range rows {
		if r.NA != "" {
			fmt.Fprintf(tw, "%s\tnot available\t-\t-\t-\t-\t-\t-\t-\n", r.Case)
			continue
		}
		speed, ttft := "-", "-"
		if baseTPOT > 0 && r.Timing.TPOTMs > 0 && r.Timing.TTFTMs > 0 {
			speed = fmt.Sprintf("%.2fx", baseTPOT/r.Timing.TPOTMs)
			ttft = fmt.Sprintf("%.2fx", baseTTFT/r.Timing.TTFTMs)
		}
		var pr, us []string
		var kills int64
		for _, d := range r.Devices {
			pr = append(pr, fmt.Sprintf("%s %.1f%%", d.Name, 100*d.Pressure))
			us = append(us, fmt.Sprintf("%.0f%%", 100*d.Usage))
			kills += d.OOMKills
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\n", r.Case, r.Timing.TTFTMs, r.Timing.TPOTMs, speed, ttft,
			strings.Join(pr, ", "), strings.Join(us, " "), kills, r.Timing.Tokens)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.NA != "" {
			fmt.Fprintf(out, "  %s: not available: %s\n", r.Case, oneLine(r.NA))
		} else if r.Note != "" {
			fmt.Fprintf(out, "  %s: %s\n", r.Case, r.Note)
		}
	}
	for _, r := range rows {
		if r.NA != "" {
			continue
		}
		for _, d := range r.Devices {
			if d.hasProcesses() { // devices the case did not use have nothing to say
				fmt.Fprintf(out, "  %s, %s at its peak: %s\n", r.Case, d.Name, d.partsString())
			}
		}
	}
	fmt.Fprintf(out, "TTFT: request to first token (prompt included); TPOT: median time per output token after it; speed-up = TPOT(a)/TPOT")
	if len(bases) > 1 {
		fmt.Fprintf(out, ", TPOT(a) the median of the %d runs of (a)", len(bases))
	}
	fmt.Fprintln(out, ".")
	fmt.Fprintln(out, "pressure: peak rise of a device's non-reclaimable memory (cgroup usage minus file pages) over its cap;")
	fmt.Fprintln(out, "  peak usage/cap includes page cache, so ~100% means the cap was binding.")
	if *target == "" {
		return nil
	}
	for _, r := range rows {
		if r.Case != *target {
			continue
		}
		if r.NA != "" || len(bases) == 0 {
			fmt.Fprintf(out, "target (%s ≥ %.0fx faster than %s, pressure ≤ %.0f%%): not measured\n", *target, targetSpeedup, strings.Join(baselines, " / "), 100*targetPressure)
			return nil
		}
		speed := baseTPOT / r.Timing.TPOTMs
		worst := 0.0
		for _, d := range r.Devices {
			worst = max(worst, d.Pressure)
		}
		against := bases[0].Case
		if len(bases) > 1 {
			var each []string
			met := 0
			for _, b := range bases {
				s := b.Timing.TPOTMs / r.Timing.TPOTMs
				each = append(each, fmt.Sprintf("%.2fx of %s (%.0f ms)", s, b.Case, b.Timing.TPOTMs))
				if s >= targetSpeedup {
					met++
				}
			}
			against = fmt.Sprintf("the median of %d runs of the baseline (%.0f ms; %s; the target holds against %d of them)",
				len(bases), baseTPOT, strings.Join(each, ", "), met)
		}
		fmt.Fprintf(out, "target: %s is %.2fx faster than %s (want ≥ %.0fx: %s); worst pressure %.1f%% (want ≤ %.0f%%: %s)\n",
			*target, speed, against, targetSpeedup, verdict(speed >= targetSpeedup), 100*worst, 100*targetPressure, verdict(worst <= targetPressure))
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// parseChat reads `homering chat --json` output: the reply's text on
// stdout and, last, apitype.ChatStats as one JSON line on stderr. The last
// stats line counts (a case may run a warm-up chat first). Its TPOT is the
// mean over the decode; the note says what ring ran (k, windows, Halda's
// prediction, what each device reported).
func parseChat(lines []timedLine) (Timing, string, error) {
	var st *apitype.ChatStats
	for _, l := range lines {
		var s apitype.ChatStats
		if !strings.HasPrefix(strings.TrimSpace(l.text), "{") || json.Unmarshal([]byte(l.text), &s) != nil || s.TTFTMS == 0 {
			continue
		}
		st = &s
	}
	if st == nil {
		return Timing{}, "", errors.New("no stats line (ttft_ms) in homering chat --json's output")
	}
	t := Timing{TTFTMs: st.TTFTMS, TPOTMs: st.TPOTMS, Tokens: st.CompletionTokens}
	r := st.Ring
	if r == nil {
		return t, "ran on the head alone (no ring)", nil
	}
	var devs []string
	for _, d := range r.Devices {
		var ws []string
		for _, w := range d.Windows {
			ws = append(ws, fmt.Sprintf("%d-%d", w.Start, w.End-1))
		}
		devs = append(devs, fmt.Sprintf("%s[%s] %s, %.0f ms, reported pressure %.1f%%", d.Short, d.Case, strings.Join(ws, " "), d.MeasuredMs, 100*d.MemPressure))
	}
	note := fmt.Sprintf("TPOT is the mean; ring of %d devices, k=%d, %d layers, Halda predicted %.0f ms/token, measured %.0f; %s",
		len(r.Devices), r.K, r.Layers, r.PredictedMs, r.MeasuredMs, strings.Join(devs, "; "))
	if st.Drafted > 0 {
		note += fmt.Sprintf("; speculative: %d tokens drafted, %.0f%% accepted", st.Drafted, 100*st.DraftAcceptance)
	}
	if r.Replans > 0 {
		var lost []string
		for _, id := range r.Lost {
			lost = append(lost, id.Short())
		}
		note += fmt.Sprintf("; re-planned %d time(s) after losing %s", r.Replans, strings.Join(lost, ", "))
	}
	return t, note, nil
}
