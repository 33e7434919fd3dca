package apitype

import (
	"time"

	"homering/discovery/deviceid"
)

// Types of the web UI's endpoints (app/api ui.go, settings.go, models.go,
// plan.go, conversations.go, live.go).

// Settings is GET/POST /api/v1/settings: what the Settings page edits.
type Settings struct {
	Name          string `json:"name"`           // device name; "" means the host name
	ModelDir      string `json:"model_dir"`      // folder scanned for GGUFs; "" means none
	Model         string `json:"model"`          // path of the selected GGUF; "" means none chosen
	ContextTokens int    `json:"context_tokens"` // KV cache to plan and run for
	MemoryBudget  int64  `json:"memory_budget"`  // bytes of RAM Homering may use here; 0: no cap
	Expose        bool   `json:"expose"`         // serve the chat APIs on the LAN (then APIKey is required)
	APIKey        string `json:"api_key"`        // required from LAN clients when Expose is on
	// RingKeepSeconds is how long a ring job stays ready after a chat for
	// the conversation's next turn (0: it ends with the reply; at most 3600).
	RingKeepSeconds int `json:"ring_keep_seconds"`
	// GPU is "off" to keep Homering off this device's GPUs (no backend
	// library loaded, no GPU layers planned); "on" or "" (a file or client
	// that predates it) uses them.
	GPU string `json:"gpu"`
	// APIPort is the loopback port of the compatible APIs (default 47471);
	// a change applies when the agent restarts. A client that omits it
	// (or sends 0) leaves it as it is.
	APIPort int `json:"api_port"`
	// Draft is the speculative draft model of greedy chats: "" picks a
	// small model of the chat model's vocabulary by itself, "off" none,
	// else a GGUF's path. A client that omits it leaves it as it is.
	Draft string `json:"draft"`
}

// Model is one GGUF on disk, in GET /api/v1/models.
type Model struct {
	Path   string `json:"path"`
	Name   string `json:"name"`   // short display name
	Source string `json:"source"` // "folder", "ollama", "lmstudio", "huggingface"
	Size   int64  `json:"size"`   // bytes
	Arch   string `json:"arch"`   // general.architecture
	Quant  string `json:"quant"`  // dominant weight type of the layers, e.g. "q4_k"
	Layers int    `json:"layers"`
	Fit    string `json:"fit"` // "fits", "tight", "too big", or "unknown" when unreadable
	Why    string `json:"why"` // one sentence behind Fit
	Error  string `json:"error,omitempty"`
}

// Models is GET /api/v1/models.
type Models struct {
	Models   []Model  `json:"models"`
	Selected string   `json:"selected"`
	Scanned  []string `json:"scanned"` // folders looked at
	Devices  int      `json:"devices"` // devices the fit labels assume
}

// MemSample is one reading of memory pressure.
type MemSample struct {
	At        time.Time `json:"at"`
	Available int64     `json:"available"` // MemAvailable
	Total     int64     `json:"total"`     // MemTotal
	// Pressure is (MemAvailable at the first reading of this agent's run −
	// now) / MemTotal: how much of the machine's memory was taken since,
	// clamped to [0,1].
	Pressure float64 `json:"pressure"`
}

// Window is one round's layers on a device: [Start,End), the first GPU of
// them on the GPU.
type Window struct {
	Start int `json:"start"`
	End   int `json:"end"`
	GPU   int `json:"gpu"`
}

// MapDevice is one device on the device map.
type MapDevice struct {
	ID          deviceid.ID `json:"id"`
	Short       string      `json:"short"`
	Name        string      `json:"name"`
	Self        bool        `json:"self"`
	Paired      bool        `json:"paired"`
	Visible     bool        `json:"visible"`
	Contribute  bool        `json:"contribute"`
	InRing      bool        `json:"in_ring"`
	RingIndex   int         `json:"ring_index"` // position in the ring; -1 when not in it
	Role        string      `json:"role"`       // "head", "worker", "idle", "left out"
	Why         string      `json:"why,omitempty"`
	Case        string      `json:"case,omitempty"`
	Windows     []Window    `json:"windows"`
	PredictedMs float64     `json:"predicted_ms"`
	// UncalibratedMs is its prediction with the profiles as measured, when
	// the plan's is calibrated by earlier runs (0: not calibrated).
	UncalibratedMs float64  `json:"uncalibrated_ms,omitempty"`
	MeasuredMs     *float64 `json:"measured_ms"` // nil until the ring runs
	RTTMs          *float64 `json:"rtt_ms"`      // nil until measured
	Profile        string   `json:"profile"`     // "measured" or "default"
	RAMBytes       int64    `json:"ram_bytes"`
	VRAMBytes      int64    `json:"vram_bytes"` // what the plan puts in its VRAM (its GPU layers' weights and KV)
	// GPU is the kind of GPU the plan counts on ("cuda", "metal"; "" none:
	// every layer of its windows on the CPU) and VRAMFreeBytes what it
	// reported free (Metal: its working-set budget) when profiled.
	GPU           string `json:"gpu,omitempty"`
	VRAMFreeBytes int64  `json:"vram_free_bytes,omitempty"`
	// GPUName is the GPU as its backend names it ("Vulkan0 · …"), when
	// its profile was measured: the kind says "cuda" for any discrete card.
	GPUName string `json:"gpu_name,omitempty"`
	// CPUVariant is the ggml CPU kernels its profile was measured on (x64,
	// haswell, icelake: chosen at start by CPUID; built-in) and the variant
	// of the engine's own matrix kernels ("icelake, our kernels avx512") when
	// known.
	CPUVariant string `json:"cpu_variant,omitempty"`
	// Memory is the history, oldest first: this device's every second, a
	// paired peer's each time it answers a look (every 10 s while the map
	// is watched); empty for other peers.
	Memory []MemSample `json:"memory"`
}

// Plan is GET /api/v1/plan: the device map.
type Plan struct {
	Model       string  `json:"model"` // display name; "" when none is selected
	ModelPath   string  `json:"model_path"`
	Layers      int     `json:"layers"`
	K           int     `json:"k"`
	PredictedMs float64 `json:"predicted_ms"`
	// Streams is how many chats the plan runs at once, each with its own
	// KV cache on every device (Halda admits as many as memory allows,
	// up to 4); later ones wait for one to end. 0 without a plan.
	Streams int `json:"streams"`
	// UncalibratedMs is the prediction with the profiles as measured, when
	// PredictedMs is calibrated by earlier runs (0: not calibrated).
	UncalibratedMs float64     `json:"uncalibrated_ms,omitempty"`
	Devices        []MapDevice `json:"devices"` // ring order first, then the rest
	Problem        *Problem    `json:"problem,omitempty"`
	At             time.Time   `json:"at"`
}

// Live is one event of GET /api/v1/live (server-sent events named "live"):
// everything the UI draws, sent when something changed and every few
// seconds as a heartbeat with fresh memory readings.
type Live struct {
	Status Status `json:"status"`
	Peers  Peers  `json:"peers"`
	Plan   Plan   `json:"plan"`
	Work   []Task `json:"work"` // long work running now, oldest first
	// Ring is the last ring this agent ran as head, with each device's
	// measured ms and memory pressure; nil without an engine.
	Ring *RingStatus `json:"ring,omitempty"`
}

// Task is long work the person waits for (loading a model, fetching
// weights, profiling), drawn as a progress bar.
type Task struct {
	ID    string `json:"id"`   // stable while it runs, e.g. "load", "transfer:PEER"
	Kind  string `json:"kind"` // "load", "prompt", "transfer", "profile"
	Title string `json:"title"`
	// Detail says what is happening now or what it waits for, in a sentence.
	Detail    string `json:"detail,omitempty"`
	ElapsedMs int64  `json:"elapsed_ms"` // since it began, at the snapshot
	// Done and Total count bytes (or steps); Total 0: unknown.
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
	// Unit is what Done and Total count: "" bytes, "steps" measurement
	// steps (profiling).
	Unit string `json:"unit,omitempty"`
	// ExpectedMs is how long the same work took last time (0: unknown); with
	// no byte count the bar fills against it.
	ExpectedMs int64 `json:"expected_ms,omitempty"`
}

// ConversationMessage is one saved message of a conversation (Stats from
// the chat's done event).
type ConversationMessage struct {
	Role    string `json:"role"` // "user", "assistant"
	Content string `json:"content"`
	// Thinking is an assistant answer's reasoning (ChatToken's), shown
	// folded above it; it is not sent back to the model.
	Thinking string         `json:"thinking,omitempty"`
	Stats    map[string]any `json:"stats,omitempty"`
}

// Conversation is one saved chat.
type Conversation struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	System string `json:"system"`
	// Model is the name of the model that gave the last reply (each reply's
	// Stats has its own).
	Model string `json:"model"`
	// Params are the chat parameters the conversation runs with; nil in
	// conversations saved before they were kept (the UI's defaults apply).
	Params   *ChatParams           `json:"params,omitempty"`
	Created  time.Time             `json:"created"`
	Updated  time.Time             `json:"updated"`
	Messages []ConversationMessage `json:"messages"`
}

// ChatParams are a conversation's chat parameters, as ChatRequest takes them.
type ChatParams struct {
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	MaxTokens   int     `json:"max_tokens"` // 0: to the end of the answer (bounded by the context)
}

// ConversationSummary is one row of GET /api/v1/conversations.
type ConversationSummary struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Updated  time.Time `json:"updated"`
	Messages int       `json:"messages"`
}
