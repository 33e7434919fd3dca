//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
)

func TestTiming(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, start.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	tests := []struct {
		name string
		at   []time.Time
		want Timing
	}{
		{name: "median of the gaps after the first token", at: at(1000, 1100, 1400, 1500), want: Timing{TTFTMs: 1000, TPOTMs: 100, Tokens: 4}},
		{name: "even number of gaps", at: at(50, 150, 350), want: Timing{TTFTMs: 50, TPOTMs: 150, Tokens: 3}},
		{name: "one token has no TPOT", at: at(70), want: Timing{TTFTMs: 70, Tokens: 1}},
		{name: "no tokens", at: nil, want: Timing{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, timing(start, tt.at, 0)); diff != "" {
				t.Errorf("timing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseChat(t *testing.T) {
	lost := deviceid.ForName("lost")
	warm := `{"completion_tokens":2,"ttft_ms":900,"tpot_ms":50,"stop_reason":"length","model":"m"}`
	measured := `{"completion_tokens":16,"ttft_ms":1200.5,"tpot_ms":310.25,"stop_reason":"length","model":"m",` +
		`"ring":{"k":2,"layers":60,"predicted_ms":280,"measured_ms":310,"replans":1,"lost":["` + lost.String() + `"],` +
		`"devices":[{"short":"AAA","case":"M1","windows":[{"start":0,"end":10},{"start":30,"end":40}],"measured_ms":100,"mem_pressure":0.031}]}}`
	tests := []struct {
		name      string
		lines     []string
		want      Timing
		wantNote  []string // substrings
		wantError bool
	}{
		{name: "the last stats line counts", lines: []string{warm, "some reply text", measured},
			want:     Timing{TTFTMs: 1200.5, TPOTMs: 310.25, Tokens: 16},
			wantNote: []string{"k=2", "AAA[M1] 0-9 30-39", "3.1%", "re-planned 1 time(s) after losing " + lost.Short()}},
		{name: "no ring", lines: []string{warm}, want: Timing{TTFTMs: 900, TPOTMs: 50, Tokens: 2}, wantNote: []string{"head alone"}},
		{name: "no stats", lines: []string{"homering: the agent is not running", "{}"}, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ls []timedLine
			for _, l := range tt.lines {
				ls = append(ls, timedLine{text: l})
			}
			got, note, err := parseChat(ls)
			if (err != nil) != tt.wantError {
				t.Fatalf("error = %v, want error %v", err, tt.wantError)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("timing (-want +got):\n%s", diff)
			}
			for _, w := range tt.wantNote {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
		})
	}
}

func TestCgroupV1(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory.limit_in_bytes", "1000\n")
	write("memory.usage_in_bytes", "300\n")
	write("memory.stat", "cache 250\nrss 50\ntotal_active_file 150\ntotal_inactive_file 100\n")
	write("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	c, err := openCgroup("d1", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.begin(); err != nil { // non-reclaimable 300-250 = 50
		t.Fatal(err)
	}
	write("memory.usage_in_bytes", "900\n") // 900-300 file = 600 non-reclaimable
	write("memory.stat", "total_active_file 200\ntotal_inactive_file 100\n")
	write("memory.oom_control", "oom_kill 3\n")
	c.sample()
	write("memory.usage_in_bytes", "950\n") // a new peak: 650 non-reclaimable, its parts are read
	write("memory.stat", "total_active_file 200\ntotal_inactive_file 100\ntotal_rss 600\ntotal_shmem 20\n")
	write("memory.kmem.usage_in_bytes", "30\n")
	write("cgroup.procs", fmt.Sprintf("%d\n", os.Getpid()))
	c.sample()
	write("memory.usage_in_bytes", "400\n") // the peak stays
	c.sample()
	got := c.result()
	self := got.PeakParts["process "+processName(fmt.Sprint(os.Getpid()))]
	if self <= 0 {
		t.Errorf("peak parts %v: want this process's anonymous memory", got.PeakParts)
	}
	want := DevMem{Name: "d1", Pressure: 0.6, Usage: 0.95, OOMKills: 1, CapBytes: 1000, PeakNonReclaimable: 650,
		PeakParts: map[string]int64{"anon": 600, "shmem": 20, "kernel": 30, "process " + processName(fmt.Sprint(os.Getpid())): self}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestTable(t *testing.T) {
	dev := func(p float64) []DevMem { return []DevMem{{Name: "d1", Pressure: p, Usage: 1}} }
	a := Row{Case: "(a)", Timing: Timing{TTFTMs: 1000, TPOTMs: 600, Tokens: 4}, Devices: dev(0.1)}
	aAgain := Row{Case: "(a) again", Timing: Timing{TTFTMs: 1000, TPOTMs: 400, Tokens: 4}, Devices: dev(0.1)}
	c := Row{Case: "(c)", NA: "homering chat has no\nring options"}
	d := Row{Case: "(d)", Timing: Timing{TTFTMs: 500, TPOTMs: 100, Tokens: 4},
		Devices: []DevMem{{Name: "d1", Pressure: 0.05, Usage: 1, PeakParts: map[string]int64{"anon": 3 << 20, "process homering runner": 2 << 20}}}}
	for _, tt := range []struct {
		name      string
		rows      []Row
		baselines []string
		want      []string
	}{
		{"one baseline", []Row{a, c, d}, []string{"(a)"}, []string{
			"6.00x", // (d) TPOT ratio
			"(c): not available: homering chat has no ring options",
			"(d) is 6.00x faster than (a) (want ≥ 5x: met); worst pressure 5.0% (want ≤ 6%: met)",
			"(d), d1 at its peak: anon 3.0 MB; anonymous per process: homering runner 2.0 MB",
		}},
		{"two baselines: the median decides, both are shown", []Row{a, c, d, aAgain}, []string{"(a)", "(a) again"}, []string{
			"speed-up vs median (a)",
			"5.00x", // 500 / 100
			"(d) is 5.00x faster than the median of 2 runs of the baseline (500 ms; 6.00x of (a) (600 ms), 4.00x of (a) again (400 ms); the target holds against 1 of them) (want ≥ 5x: met)",
		}},
		{"a baseline that failed is left out", []Row{a, d, {Case: "(a) again", NA: "OOM"}}, []string{"(a)", "(a) again"}, []string{
			"(d) is 6.00x faster than (a) (want ≥ 5x: met)",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := filepath.Join(t.TempDir(), "r.jsonl")
			for _, r := range tt.rows {
				if err := appendRow(res, r); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, b := range tt.baselines {
				args = append(args, "-baseline", b)
			}
			var out strings.Builder
			if err := table(append(args, "-target", "(d)", res), &out); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
