package apitype

import (
	"time"

	"homering/discovery/deviceid"
)

// RingRun is one generation's ring: the plan it ran on last (after any
// re-plan) and what each device measured.
type RingRun struct {
	PlanID      uint64  `json:"plan_id"`
	K           int     `json:"k"`
	Layers      int     `json:"layers"`
	Streams     int     `json:"streams"`      // chats the plan runs at once (halda.Plan.Streams)
	PredictedMs float64 `json:"predicted_ms"` // Halda's prediction per token (calibrated when earlier runs were measured)
	MeasuredMs  float64 `json:"measured_ms"`  // decode ms per token, whole ring
	// UncalibratedMs is Halda's prediction with the profiles as measured,
	// before calibration by earlier runs.
	UncalibratedMs float64       `json:"uncalibrated_ms,omitempty"`
	Replans        int           `json:"replans"`
	Lost           []deviceid.ID `json:"lost"` // device IDs lost mid-generation
	// LossToTokenMs is the time from noticing the last loss to the next
	// token (re-plan, re-prefill, one token); 0 without a loss.
	LossToTokenMs float64      `json:"loss_to_token_ms"`
	Devices       []RingDevice `json:"devices"` // ring order, head first
	// Trace is where the request's time went before and during its
	// prompt; nil when the engine gave none.
	Trace *RingTrace `json:"trace,omitempty"`
}

// RingTrace is where a ring request's time went before and during its
// prompt: connecting workers and preparing the plan (0 on a kept job), and
// the prompt's passes, whose wall time less the devices' prompt compute
// (RingDevice.PromptMs) is transfer and waiting.
type RingTrace struct {
	DialMs       float64 `json:"dial_ms"`       // connecting workers (links, job asks)
	PrepareMs    float64 `json:"prepare_ms"`    // plan installed → up on every device
	PromptMs     float64 `json:"prompt_ms"`     // first prompt pass started → its logits
	PromptPasses int     `json:"prompt_passes"` // passes the prompt took
	MicroRows    int     `json:"micro_rows"`    // rows per pipelined micro-batch
}

// RingDevice is one device's part of a ring run.
type RingDevice struct {
	ID          deviceid.ID `json:"id"`
	Short       string      `json:"short"`
	Name        string      `json:"name"`
	Case        string      `json:"case"`
	Windows     []Window    `json:"windows"`
	PredictedMs float64     `json:"predicted_ms"` // Halda: this device's share per token (calibrated)
	MeasuredMs  float64     `json:"measured_ms"`  // its windows' compute per token, as it reported
	// UncalibratedMs is its share with its profile as measured.
	UncalibratedMs float64  `json:"uncalibrated_ms,omitempty"`
	MemPressure    float64  `json:"mem_pressure"` // 0..1, the largest it reported
	RTTMs          *float64 `json:"rtt_ms"`       // link from the head; nil for the head
	Profile        string   `json:"profile"`      // "measured" or "default"
	// GPU, VRAMBytes and VRAMFreeBytes as in MapDevice: its GPU's kind, what
	// the plan put in its VRAM and what it reported free.
	GPU           string `json:"gpu,omitempty"`
	VRAMBytes     int64  `json:"vram_bytes,omitempty"`
	VRAMFreeBytes int64  `json:"vram_free_bytes,omitempty"`
	GPUName       string `json:"gpu_name,omitempty"` // as in MapDevice
	// PromptMs is its compute on the prompt (all its windows, every
	// micro-batch), over Prompts computes.
	PromptMs float64 `json:"prompt_ms,omitempty"`
	Prompts  int     `json:"prompts,omitempty"`
	// VRAMUsedBytes is what its windows held on its GPU in this run
	// (weights, KV, compute buffers, as allocated: measured, where
	// VRAMBytes is the plan's estimate); VRAMFreeBytes is then what the GPU
	// reported free during the run.
	VRAMUsedBytes int64 `json:"vram_used_bytes,omitempty"`
}

// RingStatus is GET /api/v1/ring: the last ring plan this agent ran as head.
type RingStatus struct {
	Model string     `json:"model"` // file name; "" before the first ring
	Last  *RingRun   `json:"last"`  // nil before the first ring
	At    *time.Time `json:"at"`    // when Last finished
	// Note says why the last chat ran on this device alone, if it did.
	Note string `json:"note,omitempty"`
	// Self is the last chat that ran on this device alone: its measured
	// speed beside Halda's predictions; nil before one.
	Self *SelfRun `json:"self,omitempty"`
}

// SelfRun is a chat on this device alone: what Halda predicted per token,
// with its profile calibrated by the earlier runs (PredictedMs) and as
// measured (UncalibratedMs), beside what the run measured.
type SelfRun struct {
	Model          string  `json:"model"`
	MeasuredMs     float64 `json:"measured_ms"`
	PredictedMs    float64 `json:"predicted_ms"`
	UncalibratedMs float64 `json:"uncalibrated_ms"`
	// CalibratedRuns is how many earlier runs calibrated PredictedMs (0:
	// it equals UncalibratedMs).
	CalibratedRuns int       `json:"calibrated_runs"`
	At             time.Time `json:"at"`
}
