package halda

import "homering/discovery/deviceid"

// OS names the operating system of a device. It selects the memory model
// (how the OS reclaims mmap'd weights under pressure) and which disk read
// throughput the model charges: see the package doc.
type OS string

// The operating systems Halda models.
const (
	Linux   OS = "linux"
	MacOS   OS = "macos"
	Windows OS = "windows"
	Android OS = "android" // also HarmonyOS and other Linux kernels that swap out background apps
)

// GPU names the backend a device runs GPU layers on.
type GPU string

// The GPU backends. An empty GPU means the device computes on its CPU only.
const (
	NoGPU GPU = ""
	CUDA  GPU = "cuda"  // discrete VRAM; also ROCm and Vulkan on a discrete card
	Metal GPU = "metal" // Apple silicon: the GPU shares RAM with the CPU
)

// Device is one machine's profile: what it can compute, hold and read. The
// profiler writes it as JSON (homering profile --json) and `homering plan`
// reads it back, so the JSON names are part of the interface. Units are SI
// base units throughout: bytes, seconds, FLOP/s, bytes/s.
type Device struct {
	// ID is the device's Homering device ID, for a device the agent plans
	// with (app/planner sets it for this device and every peer); Solve
	// copies it into the plan (Assignment.ID, Dropped.ID), so that what
	// runs the plan never parses a name. It is zero for a device known
	// only by a name: profile files (homering profile --json, homering
	// plan, files written before IDs were kept here), halda's tables and
	// bench inputs. When set, it is unique within a Problem.
	ID deviceid.ID `json:"id,omitzero"`
	// Name identifies the device in the plan (Assignment.Device) and in
	// other devices' LinkSec: non-empty and unique within a Problem. It
	// is the only key the solver needs (equality) and is not always a
	// device ID: profile files and halda's tables name devices freely
	// (host names, "D0"); the agent's planner names a device by its ID's
	// readable text, the one name unique in a household.
	Name string `json:"name"`
	OS   OS     `json:"os"`
	GPU  GPU    `json:"gpu,omitempty"`
	// CPUVariant names the ggml CPU kernels the profile was measured on
	// (x64, haswell, icelake or built-in; the device map shows it). The
	// model does not read it: the measured rates carry its speed.
	CPUVariant string `json:"cpu_variant,omitempty"`
	// GPUName is the GPU's backend device and description ("Vulkan0 ·
	// NVIDIA GeForce RTX 3060"), for display only: GPU is the memory model
	// Halda plans with, which is "cuda" for any discrete card.
	GPUName string `json:"gpu_name,omitempty"`
	// UMA is true when CPU and GPU share memory (Apple silicon): no
	// RAM↔VRAM copy per window (eq. 13, 1-𝕀_UMA).
	UMA bool `json:"uma,omitempty"`

	// CPUFlops and GPUFlops are the measured FLOP/s per weight type
	// (s_m^{cpu,q}, s_m^{gpu,q}), keyed as Model.LayerFlops: ggml type names
	// in lower case ("q4_k", "q6_k", "q8_0", "f16", "f32").
	// A type the model uses but the profile lacks is charged at the slowest
	// rate the profile has (the profiler measures the common types only).
	CPUFlops map[string]float64 `json:"cpu_flops"`
	GPUFlops map[string]float64 `json:"gpu_flops,omitempty"`
	// CPUReadBytesPerSec and GPUReadBytesPerSec are the measured throughputs
	// of reading weights and KV cache from RAM or VRAM into the cores (𝒯_m).
	CPUReadBytesPerSec float64 `json:"cpu_read_bytes_per_s"`
	GPUReadBytesPerSec float64 `json:"gpu_read_bytes_per_s,omitempty"`
	// KVCopyCPUSec and KVCopyGPUSec: time to append one token's K and V of
	// one layer to the cache (t_m^{kv_cpy,cpu}, t_m^{kv_cpy,gpu}).
	KVCopyCPUSec float64 `json:"kv_copy_cpu_s,omitempty"`
	KVCopyGPUSec float64 `json:"kv_copy_gpu_s,omitempty"`
	// HostToGPUSec and GPUToHostSec: time to copy one hidden state (4e
	// bytes) into and out of VRAM (t_m^{ram-vram}, t_m^{vram-ram}).
	HostToGPUSec float64 `json:"host_to_gpu_s,omitempty"`
	GPUToHostSec float64 `json:"gpu_to_host_s,omitempty"`

	// RAMAvailable is d_m^avail: what the OS reports as available now
	// (Linux MemAvailable, macOS free+inactive+purgeable, Windows
	// ullAvailPhys), not total RAM.
	RAMAvailable int64 `json:"ram_available_bytes"`
	RAMTotal     int64 `json:"ram_total_bytes,omitempty"` // informational
	// SwapCanSwap and SwapAvailable (Android) bound how much of other apps'
	// memory the OS swaps out for us (d_m^bytes_can_swap, d_m^swap_avail).
	SwapCanSwap   int64 `json:"swap_can_swap_bytes,omitempty"`
	SwapAvailable int64 `json:"swap_available_bytes,omitempty"`
	// VRAMAvailable is free VRAM for a CUDA device (d_{m,cuda}^avail).
	VRAMAvailable int64 `json:"vram_available_bytes,omitempty"`
	// MetalBudget is Metal's recommended maximum working set
	// (d_{m,metal}^avail). Halda caps it by RAMAvailable: see the package doc.
	MetalBudget int64 `json:"metal_budget_bytes,omitempty"`
	// MemoryBudget, when positive, is the most RAM the person lets Homering
	// use on this device; it caps RAMAvailable and MetalBudget.
	MemoryBudget int64 `json:"memory_budget_bytes,omitempty"`

	// Disk read throughputs (s_m^disk): sequential (charged on Linux and
	// Android, where mmap reads ahead) and random (macOS, Windows), both by
	// large reads that bypass the page cache.
	DiskSeqBytesPerSec  float64 `json:"disk_seq_read_bytes_per_s"`
	DiskRandBytesPerSec float64 `json:"disk_rand_read_bytes_per_s"`
	// DiskFaultBytesPerSec, when positive, is the measured throughput of
	// reading weights through page faults on the engine's mapping, in the
	// engine's read order: what a paging device actually gets. It replaces
	// both throughputs above in every disk term (see the package doc).
	DiskFaultBytesPerSec float64 `json:"disk_fault_read_bytes_per_s,omitempty"`

	// DiskReadAheadBytes, when positive, is the read-around of a page
	// fault on the disk holding the model (Linux: the block device's
	// read_ahead_kb): a fault on a missing page reads this much around it.
	// A MoE model's routed experts are read in slices smaller than it, so
	// each miss reads its neighbours too (package doc, "Mixture of experts").
	DiskReadAheadBytes int64 `json:"disk_read_ahead_bytes,omitempty"`

	// LinkSec maps another device's Name to the measured time to send it one
	// hidden state (t_m^comm towards that device). Missing entries fall back
	// to Problem.DefaultLinkSec.
	LinkSec map[string]float64 `json:"link_s,omitempty"`
}

// Model is the model profile: what one layer weighs and costs. JSON names
// are part of the interface (`homering plan --shape`).
type Model struct {
	Name string `json:"name,omitempty"`
	// Layers is L, the number of repeating (transformer) layers. ≥ 1.
	Layers int `json:"layers"`
	// LayerBytes is b, the bytes of one layer's weights, by weight type
	// (the average over layers when they differ).
	LayerBytes map[string]int64 `json:"layer_bytes"`
	// LayerFlops is f^q: FLOPs of one layer for one token, by weight type.
	LayerFlops map[string]float64 `json:"layer_flops"`
	// InputBytes (b_i) is the token embedding table; only one row of it,
	// b_i/V, is read per token.
	InputBytes int64 `json:"input_bytes"`
	// OutputBytes (b_o) and OutputFlops (f_out^q): the output norm and head,
	// run on the head device's CPU.
	OutputBytes int64              `json:"output_bytes"`
	OutputFlops map[string]float64 `json:"output_flops,omitempty"`
	Vocab       int                `json:"vocab"`     // V ≥ 1
	Embedding   int                `json:"embedding"` // e, informational: link times are measured for 4e bytes
	// KVBytesPerToken is 2(h_k e_k + h_v e_v): the F16 K and V of one token
	// in one layer.
	KVBytesPerToken int64 `json:"kv_bytes_per_token"`
	// ContextTokens is n_kv. Homering plans for the configured context, so a
	// plan stays valid as the conversation grows.
	ContextTokens int `json:"context_tokens"`
	// CPUBufferBytes and GPUBufferBytes are the compute buffers c^cpu, c^gpu.
	CPUBufferBytes int64 `json:"cpu_buffer_bytes,omitempty"`
	GPUBufferBytes int64 `json:"gpu_buffer_bytes,omitempty"`

	// Mixture of experts (package doc, "Mixture of experts"): all zero for
	// a dense model, whose tokens read every byte of every layer. A MoE
	// model sets LayerReadBytes, LayerHotBytes and ColdReadRate together.
	//
	// LayerExpertBytes is e, the part of LayerBytes in routed experts'
	// weights (the rest, a = b − e: attention, router, shared experts and
	// norms, is read by every token). A token reads r − a of it.
	LayerExpertBytes int64 `json:"layer_expert_bytes,omitempty"`
	// ExpertSliceBytes is s, one expert's contiguous bytes in one expert
	// tensor (a stack holds n such slices): the unit a missed expert is
	// read in. 0: unknown (no read-around is charged).
	ExpertSliceBytes int64 `json:"expert_slice_bytes,omitempty"`
	// LayerReadBytes is r, the expected bytes one token reads of one layer:
	// the always-read part plus the routed experts' expected share. It
	// replaces b in the compute (memory read) terms and in the re-read of a
	// window that does not hold its hot set.
	LayerReadBytes int64 `json:"layer_read_bytes,omitempty"`
	// LayerHotBytes is h, the bytes of one layer the page cache must hold so
	// that a paging device re-reads only cold experts: the always-read part
	// plus the experts routed more often than uniformly. It replaces b in
	// the window rows.
	LayerHotBytes int64 `json:"layer_hot_bytes,omitempty"`
	// ColdReadRate is ρ, the expected fraction of the bytes beyond the hot
	// set that one token reads (the mean routing frequency of a cold expert);
	// the paged overflow is re-read at this rate instead of whole. In (0, 1].
	ColdReadRate float64 `json:"cold_read_rate,omitempty"`
	// Routing says where the three came from ("measured: …" or "uniform
	// top-k of n: no routing histogram"), for display; Halda does not read it.
	Routing string `json:"routing,omitempty"`
}

// Problem is everything Solve needs. Devices[0] is the head: it looks up the
// token embedding, runs the output layer and samples (000 §3.1).
type Problem struct {
	Devices []Device `json:"devices"`
	Model   Model    `json:"model"`
	// DiskThreshold is s_threshold^disk in bytes/s: a device whose disk reads
	// slower than this is never planned to page weights (case M4 only).
	// Zero means DefaultDiskThreshold.
	DiskThreshold float64 `json:"disk_threshold_bytes_per_s,omitempty"`
	// DefaultLinkSec is charged for a pair of devices whose profile has no
	// measured link time. Zero means such a pair is an error.
	DefaultLinkSec float64 `json:"default_link_s,omitempty"`
	// MaxIterations caps the case-assignment loop of Algorithm 1. Zero means
	// 2·M+4.
	MaxIterations int `json:"max_iterations,omitempty"`
	// KeepAllDevices turns device selection off (every device gets ≥ 1 layer).
	KeepAllDevices bool `json:"keep_all_devices,omitempty"`
	// Rounds, when positive, fixes k: only plans with that many rounds per
	// token are considered. It must divide Model.Layers and leave a window
	// of at least one layer per device (the head too with HeadHoldsLayers).
	Rounds int `json:"rounds,omitempty"`
	// HeadHoldsLayers makes the head run at least one layer per round
	// instead of possibly only input and output: an engine whose ring plan
	// needs a window on every device (engine/ring/wire) sets it.
	HeadHoldsLayers bool `json:"head_holds_layers,omitempty"`
	// Streams is the most conversations the ring should run at once, each
	// with its own KV cache of ContextTokens on every device (package doc,
	// "Streams"): Solve admits as many of them as memory allows at little
	// cost to one conversation (Plan.Streams). 0 or 1: one; at most
	// MaxStreams.
	Streams int `json:"streams,omitempty"`
}

// MaxStreams bounds Problem.Streams. The ring's wire carries at most 8
// (engine/ring/wire.MaxStreams); Halda's arithmetic would allow more.
const MaxStreams = 64

// StreamSlowdown is how much slower than the one-conversation plan a plan
// that admits more conversations may be predicted (package doc,
// "Streams"): 5%, the ring's own bound for a difference not worth a new
// plan (engine/ring.Adopt's τ = 0.95).
const StreamSlowdown = 1.05

// DefaultDiskThreshold is s_threshold^disk when the Problem sets none. The
// papers give no value; 100 MB/s is a hard disk's random-read ceiling, below
// which paging a 70B model costs seconds per token.
const DefaultDiskThreshold = 100e6

// Case is the memory case of a device in a plan (000 §3.2, A.3).
type Case string

// The cases. M5 is Homering's: the papers do not model Windows.
const (
	M1 Case = "M1" // macOS without Metal, RAM short: the overflow is re-read per token
	M2 Case = "M2" // macOS with Metal, memory short: all its weights are re-read per token
	M3 Case = "M3" // Linux or Android, RAM short: the CPU layers' overflow is re-read
	M4 Case = "M4" // memory enough, or a disk too slow to page from: nothing re-read
	M5 Case = "M5" // Windows, RAM short: the CPU layers' overflow is re-read at random-read speed
)

// Plan is Halda's answer.
type Plan struct {
	// K is the number of rounds a token makes around the ring; Window is
	// W = Σ w_m = L/K.
	K      int `json:"k"`
	Window int `json:"window"`
	// Ring lists the devices taking part, in ring order, head first.
	Ring []Assignment `json:"ring"`
	// Dropped lists the devices left out and why.
	Dropped []Dropped `json:"dropped,omitempty"`
	// Predicted time per token (T of eq. 11), in milliseconds, and its split.
	PredictedMs float64 `json:"predicted_ms"`
	ComputeMs   float64 `json:"compute_ms"` // compute and memory access (eqs. 12-14)
	DiskMs      float64 `json:"disk_ms"`    // disk loading (eqs. 15-19)
	NetworkMs   float64 `json:"network_ms"` // hidden states between neighbours (eq. 19)
	// Streams is how many conversations the plan admits at once: every
	// device's memory rows hold that many KV caches of the context
	// (Problem.Streams, package doc "Streams"). ≥ 1 from Solve; 0 in a
	// plan made before it was kept means 1.
	Streams int `json:"streams,omitempty"`
	// Stats describes the search.
	Stats Stats `json:"stats"`
}

// Assignment is one device's part of a plan.
type Assignment struct {
	Device string      `json:"device"`      // the device's Name
	ID     deviceid.ID `json:"id,omitzero"` // the device's ID (Device.ID), zero for a device known by name only
	OS     OS          `json:"os"`
	Case   Case        `json:"case"`
	W      int         `json:"w"` // layers per round (window size)
	N      int         `json:"n"` // of those, on the GPU: the first N of each window
	// Layers holds, per round, the half-open range [Start, End) of layer
	// numbers (0-based) this device runs.
	Layers      []LayerRange `json:"layers"`
	ComputeMs   float64      `json:"compute_ms"`
	DiskMs      float64      `json:"disk_ms"`
	NetworkMs   float64      `json:"network_ms"`
	PredictedMs float64      `json:"predicted_ms"`
	// RAMBytes is what the plan asks of RAM (CPU layers' weights and KV,
	// buffers, head input/output); the part above the device's available
	// memory is paged (cases M1-M3, M5). VRAMBytes is what it pins in VRAM.
	RAMBytes  int64 `json:"ram_bytes"`
	VRAMBytes int64 `json:"vram_bytes"`
	// ResidentBytes is what stays resident: non-evictable memory (KV cache,
	// buffers) plus as many weights as fit. Never more than the device's
	// available memory (or budget).
	ResidentBytes int64 `json:"resident_bytes"`
}

// LayerRange is a half-open range of layer numbers.
type LayerRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Dropped is a device left out of the ring.
type Dropped struct {
	Device string      `json:"device"`      // the device's Name
	ID     deviceid.ID `json:"id,omitzero"` // its ID, as in Assignment
	Reason string      `json:"reason"`
}

// Stats counts the work of one Solve.
type Stats struct {
	ILPs       int `json:"ilps"`       // ILPs handed to the Solver
	Pruned     int `json:"pruned"`     // ILPs skipped: their lower bound could not beat the best plan so far
	Iterations int `json:"iterations"` // case-assignment iterations over all subsets tried
	Subsets    int `json:"subsets"`    // device subsets solved (device selection)
}
