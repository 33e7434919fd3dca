package ring

import (
	"testing"

	"homering/engine/ring/wire"
)

func TestPassEnd(t *testing.T) {
	fast := 10.0  // ms per token
	slow := 500.0 // ms per token
	for _, tt := range []struct {
		name                string
		pos, nPrompt, total int
		msPerToken          float64
		want                int
	}{
		{"a short prompt in one pass", 0, 40, 40, 0, 40},
		{"a long prompt in passes of 512", 0, 700, 700, 0, 512},
		{"the long prompt's last pass", 512, 700, 700, 0, 700},
		{"a decode step", 45, 40, 46, fast, 46},
		{"a re-prefill ends its prompt pass at the prompt's end", 0, 40, 60, fast, 40},
		{"a long re-prefill's prompt passes are the first prefill's", 512, 700, 760, fast, 700},
		{"then the generated tokens one by one", 40, 40, 60, fast, 41},
		{"up to 64 of them", 50, 40, 104, fast, 51},
		{"more than 64 go in a batch", 40, 40, 105, fast, 105},
		{"a batch is at most 512", 40, 40, 1000, fast, 552},
		{"one by one only while it takes at most 10 s", 40, 40, 61, slow, 61},
		{"20 tokens at 500 ms take 10 s: still exact", 40, 40, 60, slow, 41},
		{"before any decode step was timed", 40, 40, 50, 0, 41},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PassEnd(tt.pos, tt.nPrompt, tt.total, 512, tt.msPerToken); got != tt.want {
				t.Errorf("PassEnd(%d, %d, %d) = %d, want %d", tt.pos, tt.nPrompt, tt.total, got, tt.want)
			}
		})
	}
}

func TestPassRows(t *testing.T) {
	// The bench model's shape (bench/ring.sh full size) and the 0.9 GB test
	// model's: 108 KB per row estimated at a 512 context (90 KB measured).
	big := Shape{NEmbd: 2048, NFF: 5632, NHead: 16}
	small := Shape{NEmbd: 256, NFF: 512, NHead: 4}
	for _, tt := range []struct {
		name  string
		info  Shape
		nCtx  int
		limit int64
		want  int
	}{
		{"plenty of memory: full passes", big, 512, 16 << 30, 512},
		{"a 1.5 GiB cap: 31 MB for compute, 256 rows", big, 512, 1536 << 20, 256},
		{"a 256 MiB cap: 32 rows at least", big, 512, 256 << 20, 32},
		{"a longer context costs more per row", big, 4096, 1536 << 20, 64},
		{"a small model needs little", small, 512, 1 << 30, 512},
		{"a small model under a 256 MiB cap", small, 512, 256 << 20, 256},
		{"memory unknown: full passes", big, 512, 0, 512},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PassRows(512, tt.info, tt.nCtx, tt.limit); got != tt.want {
				t.Errorf("PassRows(%+v, %d, %d) = %d, want %d", tt.info, tt.nCtx, tt.limit, got, tt.want)
			}
		})
	}
}

func TestJobContext(t *testing.T) {
	for _, tt := range []struct {
		name                    string
		nCtx, prompt, max, want int
	}{
		{"a short chat holds what it uses", 4096, 40, 16, 64},
		{"exactly a step", 4096, 200, 55, 256},
		{"one past a step", 4096, 200, 56, 288},
		{"never more than the context", 512, 400, 400, 512},
		{"no limit on the reply: the whole context", 2048, 40, 0, 2048},
	} {
		if got := JobContext(tt.nCtx, tt.prompt, tt.max); got != tt.want {
			t.Errorf("%s: JobContext(%d, %d, %d) = %d, want %d", tt.name, tt.nCtx, tt.prompt, tt.max, got, tt.want)
		}
	}
}

func TestKeptContext(t *testing.T) {
	for _, tt := range []struct {
		name                    string
		nCtx, prompt, max, want int
	}{
		{"a short chat and room for its next turn", 4096, 40, 16, 224},
		{"a long one: twice what it needs", 4096, 400, 100, 1024},
		{"never more than the context", 512, 200, 100, 512},
		{"no limit on the reply: the whole context", 2048, 40, 0, 2048},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := KeptContext(tt.nCtx, tt.prompt, tt.max)
			if got != tt.want {
				t.Errorf("KeptContext(%d, %d, %d) = %d, want %d", tt.nCtx, tt.prompt, tt.max, got, tt.want)
			}
			if fresh := JobContext(tt.nCtx, tt.prompt, tt.max); got < fresh {
				t.Errorf("a kept job's cache %d is smaller than a fresh job's %d", got, fresh)
			}
		})
	}
}

func TestKeptPrefix(t *testing.T) {
	seq := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	kv := seq(1100) // 1000 prompt tokens and 100 generated
	for _, tt := range []struct {
		name                  string
		toks                  []int32
		exact, keptRows, rows int
		want                  int
	}{
		{"two full passes held, the prompt goes on", seq(1300), 1024, 512, 512, 1024},
		{"only full passes count", seq(1300), 512, 512, 512, 512},
		{"a shorter shared prefix", append(seq(700), 9999, 1), 1024, 512, 512, 512},
		{"a prompt shorter than a pass", seq(300), 1024, 512, 512, 0},
		{"the same prompt, a multiple of the pass: its last pass again", seq(1024), 1024, 512, 512, 512},
		{"passes of another size", seq(1300), 1024, 512, 256, 0},
		{"nothing exact", seq(1300), 0, 512, 512, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := KeptPrefix(kv, tt.toks, tt.exact, tt.keptRows, tt.rows); got != tt.want {
				t.Errorf("keptPrefix = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMicroRows(t *testing.T) {
	for _, tt := range []struct {
		name          string
		rows, devices int
		release       bool
		want          int
	}{
		{"one device is not pipelined", 512, 1, false, 512},
		{"three devices: about two micro-batches each", 512, 3, false, 64},
		{"two devices", 512, 2, false, 128},
		{"a pass shortened for memory: never below 32", 64, 3, false, 32},
		{"the smallest pass", 32, 3, false, 32},
		{"eight devices", 512, 8, false, 32},
		{"windows released after each round: one batch", 512, 3, true, 512},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := MicroRows(tt.rows, tt.devices, tt.release); got != tt.want {
				t.Errorf("MicroRows(%d, %d, %v) = %d, want %d", tt.rows, tt.devices, tt.release, got, tt.want)
			}
		})
	}
}

func TestPlanMicroRows(t *testing.T) {
	plan := func(k int, release ...bool) *wire.Plan {
		p := &wire.Plan{K: k}
		for _, r := range release {
			p.Devices = append(p.Devices, wire.Device{Release: r})
		}
		return p
	}
	for _, tt := range []struct {
		name string
		plan *wire.Plan
		want int
	}{
		{"three devices, nothing released", plan(1, false, false, false), 64},
		{"k = 1: a released window is read once per pass anyway", plan(1, false, true, false), 64},
		{"k = 2, one device releases: one batch", plan(2, false, true, false), 512},
		{"k = 2, nothing released", plan(2, false, false, false), 64},
		{"the head alone", plan(1, true), 512},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanMicroRows(512, tt.plan); got != tt.want {
				t.Errorf("PlanMicroRows(512, %s) = %d, want %d", MsgString(tt.plan), got, tt.want)
			}
		})
	}
}
