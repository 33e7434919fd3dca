package job

import (
	"time"

	"homering/discovery/deviceid"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/halda"
)

// Params say how to run a ring job from the head: the ring part of the
// runner protocol's ring_generate (runner.RingParams, whose doc says what
// each field means), and the load's threads.
type Params struct {
	Plan       *wire.Plan     // Devices[0] is the head
	Problem    *halda.Problem // what a loss is re-planned from; nil: a loss ends the request
	Peers      []Peer         // every worker of the plan
	Identity   string         // config dir holding this device's certificate and key
	NoPrefetch bool           // never prefetch the next window
	TickMS     int            // the ring's tick; 0: 500 ms
	KeepMS     int            // hold the job idle this long after the request; 0: end it
	Threads    int            // compute threads; 0: all cores
	// Streams is how many conversations the plan admits at once
	// (halda.Plan.Streams: its memory holds that many KV caches on every
	// device); a request beyond them waits until one ends. 0: every
	// stream the wire carries (wire.MaxStreams).
	Streams int
	// Refusals, when set, counts what the job's links refuse (a worker's
	// frame of a plan never installed, transport refusals), for `homering
	// doctor`; nil: not counted.
	Refusals *transport.Refusals
}

// The types below travel on the runner protocol's pipe as they are
// (runner aliases them): their JSON is the protocol's.

// Peer is one worker of a ring job: its device ID and the address its
// runner child listens on (StartWorker's answer on that device).
// Its ID travels as its readable text, as before it was typed: the JSON
// of ring_generate is unchanged.
type Peer struct {
	ID   deviceid.ID `json:"id"`
	Addr string      `json:"addr"`
}

// DeviceStats is one device's part of a ring generation, as measured.
type DeviceStats struct {
	ID      deviceid.ID  `json:"id"`
	Windows []wire.Range `json:"windows"`
	// ComputeMS is the device's measured compute time per token, all its
	// windows together (decode tokens only).
	ComputeMS float64 `json:"compute_ms"`
	// MemPressure is the largest memory pressure the device saw during the
	// job: the drop of MemAvailable over MemTotal since the job began, or,
	// inside a memory cgroup with a limit below the machine's RAM, the
	// cgroup's usage less its page cache (mapped weights the kernel may
	// evict) over the limit. 0..1.
	MemPressure float64 `json:"mem_pressure"`
	// Fetched is the weight-slice bytes the device fetched for the plan (0
	// on a warm restart: its cache had the slice); SliceBytes its slice's
	// tensor bytes. 0 on the head, which holds the model.
	Fetched    int64 `json:"fetched,omitempty"`
	SliceBytes int64 `json:"slice_bytes,omitempty"`
	// PromptMS is the device's compute on this request's prompt (its
	// windows over every micro-batch, the head's output head included),
	// Prompts how many computes that took, PromptRows their rows.
	PromptMS   float64 `json:"prompt_ms,omitempty"`
	Prompts    int     `json:"prompts,omitempty"`
	PromptRows int     `json:"prompt_rows,omitempty"`
	// VRAMUsed is what the device's windows hold on its GPU (weights, KV,
	// compute buffers, as allocated), VRAMFree what its GPU reported free
	// then; 0 without GPU layers.
	VRAMUsed int64 `json:"vram_used,omitempty"`
	VRAMFree int64 `json:"vram_free,omitempty"`
}

// ServeParams say how a worker serves ring jobs.
type ServeParams struct {
	Identity string        `json:"identity"` // config dir holding this device's certificate and key
	Allowed  []deviceid.ID `json:"allowed"`  // devices that may connect: the head and the other workers (their readable text in the JSON)
	CacheDir string        `json:"cache_dir"`
	// CacheMax is what the slice cache may keep beyond twice the current
	// job's slices (engine/slice Budget); 0: slice.DefaultCap (1 GiB).
	CacheMax int64  `json:"cache_max,omitempty"`
	Listen   string `json:"listen"` // "": "[::]:0"
	Threads  int    `json:"threads,omitempty"`

	// OnServing (child side only) hears what the worker does for a head:
	// when a job starts, when each plan is up, when its memory or idleness
	// changes (checked every second) and when it ends. It must not block.
	OnServing func(Serving) `json:"-"`
	// Refusals (child side only), when set, counts what the worker refuses
	// on its listener and links: connections the transport refuses, frames
	// of a plan or job it does not have. For `homering doctor`.
	Refusals *transport.Refusals `json:"-"`
}

// Serving is what a worker does for a head now, as engine/runner's child
// tells its parent (the agent shows it: whose chat, which layers, what
// memory). Its JSON names are that protocol's.
type Serving struct {
	Job  uint64      `json:"job"`
	Head deviceid.ID `json:"head"`
	// Windows are this device's layers in the plan that is up (one range
	// per round), GPULayers how many of each run on its GPU; empty until
	// the first plan is up.
	Windows   []wire.Range `json:"windows,omitempty"`
	GPULayers int          `json:"gpu_layers,omitempty"`
	// AnonBytes is the engine process's resident anonymous memory (KV
	// caches, compute buffers, heap: the weights are page cache), Pressure
	// the memory taken since the job began as a fraction of the machine's
	// (or its cgroup limit), as in DeviceStats.
	AnonBytes int64   `json:"anon_bytes,omitempty"`
	Pressure  float64 `json:"pressure,omitempty"`
	Idle      bool    `json:"idle,omitempty"`  // the head holds the job between its requests
	Ended     bool    `json:"ended,omitempty"` // the job ended: the device serves no one now
	// Since is when the job started.
	Since time.Time `json:"since"`
}

// Progress is how far the head has sent a worker the weights of its
// windows: Done of at most Total tensor bytes (a worker whose cache already
// holds layers fetches less, and the transfer ends below Total).
type Progress struct {
	Device deviceid.ID `json:"device"`
	Done   int64       `json:"done"`
	Total  int64       `json:"total"`
}

// Result is a ring request's part of the generation's stats (the runner
// protocol's done event carries it in runner.Stats, whose doc says what
// each field means).
type Result struct {
	Devices       []DeviceStats // ring order, head first, of the last plan
	Replans       int           // plans installed after losses
	Lost          []deviceid.ID // the workers lost, in order; with Plan, the last re-plan without them
	Plan          *halda.Plan
	PlanID        uint64  // the ring plan that finished the reply
	LossToTokenMS float64 // from noticing the last lost worker to the next token
	Passes, Rows  int     // forward passes round the ring and the token rows they carried
	Trace         *Trace  // where the request's time went before and during its prompt
}
