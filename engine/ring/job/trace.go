package job

import (
	"time"

	"homering/discovery/deviceid"
	"homering/engine/ring/wire"
)

// Trace is where a ring request's time went before and during its
// prompt (issue 19): setting up the job (dials, the plan prepared on every
// device) and the prompt's passes, whose wall time less each device's
// compute (DeviceStats.PromptMS) is transfer and waiting.
type Trace struct {
	// DialMS is the time spent connecting workers for this request (the
	// link, the job's ask and answer, the slice connection); 0 on a kept
	// job.
	DialMS float64 `json:"dial_ms,omitempty"`
	// PrepareMS is from installing the last plan to it being up on every
	// device (slices checked or fetched, windows opened); 0 on a kept job.
	PrepareMS float64 `json:"prepare_ms,omitempty"`
	// PromptMS is from the prompt's first pass starting to its last pass's
	// logits (on the last plan, after a re-plan's re-prefill).
	PromptMS float64 `json:"prompt_ms,omitempty"`
	// PromptPasses is how many passes carried it, MicroRows the rows of
	// their micro-batches (ring.MicroRows: the pipelining).
	PromptPasses int `json:"prompt_passes,omitempty"`
	MicroRows    int `json:"micro_rows,omitempty"`
}

// trace is the head job's clock of one request.
type trace struct {
	dial                  time.Duration
	installed, up         time.Time
	promptStart, promptAt time.Time
	passes                int
	base                  map[deviceid.ID]wire.DeviceStats // the devices' stats when the request began (a kept job's add up)
}

// result is the request's Trace.
func (t *trace) result(micro int) *Trace {
	r := &Trace{DialMS: ms(t.dial), PromptPasses: t.passes, MicroRows: micro}
	if !t.installed.IsZero() && t.up.After(t.installed) {
		r.PrepareMS = ms(t.up.Sub(t.installed))
	}
	if !t.promptStart.IsZero() && t.promptAt.After(t.promptStart) {
		r.PromptMS = ms(t.promptAt.Sub(t.promptStart))
	}
	return r
}

// promptPart is what a device computed of this request's prompt: s less
// what it had when the request began (the same plan's counters go on
// across a kept job's requests; a new plan starts them again).
func promptPart(s, base wire.DeviceStats) (us uint64, n, rows uint32) {
	if s.Plan == base.Plan && s.PromptUS >= base.PromptUS && s.Prompts >= base.Prompts && s.PromptRows >= base.PromptRows {
		return s.PromptUS - base.PromptUS, s.Prompts - base.Prompts, s.PromptRows - base.PromptRows
	}
	return s.PromptUS, s.Prompts, s.PromptRows
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
