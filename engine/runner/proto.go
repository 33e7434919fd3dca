package runner

import (
	"encoding/json"

	"homering/discovery/deviceid"
	"homering/engine/chat"
	"homering/engine/sample"
	"homering/halda"
)

// Proto is the protocol version the child announces in its hello. 2: a
// generate carries a grammar (GenerateParams.Grammar, JSONSchema), which a
// child of version 1 would drop without a word and answer unconstrained.
// 3: the JSON schema may be a forced tool call's (GenerateParams.Call),
// which a child of version 2 would drop. 4: a serving child sends job
// events (EvJob) unasked, which a parent of version 3 would queue among
// its answers. 5: a child sends what its ring links refused (EvRefused)
// unasked, which a parent of version 4 would queue among its answers.
const Proto = 5

// MaxLine is the longest protocol line either side accepts; a longer line is
// a protocol error, not an allocation.
const MaxLine = 16 << 20

// Ops of a Request.
const (
	OpLoad     = "load"
	OpGenerate = "generate"
	OpStop     = "stop"
	OpUnload   = "unload"

	OpRingGenerate = "ring_generate" // head: run a generation on a ring
	OpServeRing    = "serve_ring"    // worker: listen and serve ring jobs
	OpRingEnd      = "ring_end"      // head: end the ring job held idle (RingParams.KeepMS); answered with ended
)

// Types of an Event.
const (
	EvHello    = "hello"
	EvLoaded   = "loaded"
	EvToken    = "token"
	EvDone     = "done"
	EvUnloaded = "unloaded"
	EvError    = "error"

	EvServing  = "serving"  // serve_ring: listening at Addr
	EvProgress = "progress" // ring_generate: weights sent to a worker so far
	EvEnded    = "ended"    // ring_end: no ring job is held any more
	// EvJob is sent unasked, with serve_ring's ID, while serving: what the
	// worker does for a head (a job started, its plan up, its memory, its
	// end). The supervisor keeps the last one (Supervisor.Serving).
	EvJob = "job"
	// EvRefused is sent unasked (id 0), at most once a second: what the
	// child's ring links refused since its previous one, by reason
	// (engine/ring/transport's Refused… words). The supervisor hands it to
	// Options.OnRefused.
	EvRefused = "refused"
)

// Error codes of an error Event.
const (
	CodeBusy       = "busy"
	CodeNotLoaded  = "not_loaded"
	CodeBadRequest = "bad_request"
	CodeLoad       = "load"
	CodeGenerate   = "generate"
	CodeRing       = "ring" // the ring could not be set up or served
)

// Stop reasons in Stats.Reason.
const (
	ReasonStop      = "stop"      // the model ended its turn
	ReasonLength    = "length"    // max_tokens or the end of the context
	ReasonCancelled = "cancelled" // stop, or the caller went away
)

// Request is one line from the parent.
type Request struct {
	ID       uint64          `json:"id"`
	Op       string          `json:"op"`
	Target   uint64          `json:"target,omitempty"` // stop: the generate to end
	Load     *LoadParams     `json:"load,omitempty"`
	Generate *GenerateParams `json:"generate,omitempty"`
	Ring     *RingParams     `json:"ring,omitempty"`  // ring_generate
	Serve    *ServeParams    `json:"serve,omitempty"` // serve_ring
}

// LoadParams say which model to map and how big a context to give it.
type LoadParams struct {
	Model   string `json:"model"`
	NCtx    int    `json:"n_ctx,omitempty"`   // 0: the model's, at most 4096
	Threads int    `json:"threads,omitempty"` // 0: all cores
	// GPULayers puts the model's first layers on the GPU (the planner's n
	// for this device alone), OutputGPU its output head too: head.Config.
	// Either needs a GPU backend loaded in the child (LoadGPU).
	GPULayers int  `json:"gpu_layers,omitempty"`
	OutputGPU bool `json:"output_gpu,omitempty"`
	// Draft is the path of a small model of the same vocabulary that
	// proposes tokens for greedy requests to verify in one pass
	// (engine/head's speculative decoding); "" none. It runs on this
	// device's CPU with the request's context and threads.
	Draft string `json:"draft,omitempty"`
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// GenerateParams is one generation. Messages are formatted with the model's
// chat template; Prompt is used as is when Messages is empty.
type GenerateParams struct {
	Messages      []Message `json:"messages,omitempty"`
	Prompt        string    `json:"prompt,omitempty"`
	MaxTokens     int       `json:"max_tokens,omitempty"` // 0: until the model stops or the context is full
	Temperature   float32   `json:"temperature"`
	TopK          int       `json:"top_k"`
	TopP          float32   `json:"top_p"`
	MinP          float32   `json:"min_p"`
	RepeatPenalty float32   `json:"repeat_penalty"`
	RepeatLastN   int       `json:"repeat_last_n"`
	Seed          uint64    `json:"seed"`
	// Opening follows the formatted Messages' generation prompt
	// (engine/head.Request's).
	Opening string `json:"opening,omitempty"`
	// Structured output: the reply follows a grammar, given as GBNF
	// (llama.cpp's grammar format; its rule root is the whole reply) or as
	// a JSON schema the child turns into one; at most one of the two.
	Grammar    string          `json:"grammar,omitempty"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
	// Call, with JSONSchema, makes the reply a tool call in the template's
	// own format (engine/chat.ForcedCall): the JSON between literal text.
	Call *CallGrammar `json:"call,omitempty"`
}

// CallGrammar is the text around a forced tool call's JSON.
type CallGrammar struct {
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// DefaultGenerate is llama.cpp's sampling (engine/sample.Defaults) with no
// length limit.
func DefaultGenerate() GenerateParams {
	d := sample.Defaults()
	return GenerateParams{
		Temperature: d.Temperature, TopK: d.TopK, TopP: d.TopP, MinP: d.MinP,
		RepeatPenalty: d.RepeatPenalty, RepeatLastN: d.RepeatLastN,
	}
}

func (g GenerateParams) sampling() sample.Params {
	return sample.Params{
		Temperature: g.Temperature, TopK: g.TopK, TopP: g.TopP, MinP: g.MinP,
		RepeatPenalty: g.RepeatPenalty, RepeatLastN: g.RepeatLastN,
	}
}

func (g GenerateParams) messages() []chat.Message {
	out := make([]chat.Message, len(g.Messages))
	for i, m := range g.Messages {
		out[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// ModelInfo describes the loaded model.
type ModelInfo struct {
	Path   string `json:"path"`
	Arch   string `json:"arch"`
	Layers int    `json:"layers"`
	NCtx   int    `json:"n_ctx"`
	Vocab  int    `json:"vocab"`
}

// Token is one generated piece of text.
type Token struct {
	ID   int32  `json:"id"`
	Text string `json:"text"` // complete UTF-8; may be empty
	EOG  bool   `json:"eog,omitempty"`
}

// Stats are the timings of one generation.
type Stats struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CachedTokens     int     `json:"cached_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	PromptMS         float64 `json:"prompt_ms"`
	DecodeTokens     int     `json:"decode_tokens"`
	DecodeMS         float64 `json:"decode_ms"`
	// Speculation (LoadParams.Draft): tokens the draft proposed and those
	// the model accepted.
	Drafted  int     `json:"drafted,omitempty"`
	Accepted int     `json:"accepted,omitempty"`
	TotalMS  float64 `json:"total_ms"`
	// StartMS is the time from the request to the first prompt pass
	// starting (tokenizing, a ring job's links and plan, a kept job's
	// claim): what a turn costs before any compute.
	StartMS float64 `json:"start_ms,omitempty"`
	Reason  string  `json:"reason"`

	// Ring generations only.
	Devices []DeviceStats `json:"devices,omitempty"` // ring order, head first, of the last plan
	Replans int           `json:"replans,omitempty"` // plans installed after losses
	// Lost are the workers the ring lost, in the order it lost them, and
	// Plan the plan the child re-planned without them last (nil when it
	// did not re-plan): the agent learns of a loss only here.
	Lost []deviceid.ID `json:"lost,omitempty"`
	Plan *halda.Plan   `json:"plan,omitempty"`
	// PlanID is the ring plan that finished the reply (wire.Plan.ID).
	PlanID uint64 `json:"plan_id,omitempty"`
	// LossToTokenMS is the time from noticing the last lost worker to the
	// next token reaching the parent (re-plan, re-prefill and one token).
	LossToTokenMS float64 `json:"loss_to_token_ms,omitempty"`
	// Passes is how many forward passes went round the ring, Rows how many
	// token rows they carried (prefill, re-prefill and decode): a request
	// on a kept job evaluates PromptTokens - CachedTokens prompt rows.
	Passes int `json:"passes,omitempty"`
	Rows   int `json:"rows,omitempty"`
	// Trace is where a ring request's time went before and during its
	// prompt (engine/ring/job).
	Trace *RingTrace `json:"trace,omitempty"`
}

// Event is one line from the child.
type Event struct {
	ID    uint64     `json:"id"`
	Type  string     `json:"type"`
	Proto int        `json:"proto,omitempty"` // hello
	PID   int        `json:"pid,omitempty"`   // hello
	Model *ModelInfo `json:"model,omitempty"` // loaded
	Token *Token     `json:"token,omitempty"` // token
	Stats *Stats     `json:"stats,omitempty"` // done
	Error string     `json:"error,omitempty"` // error
	Code  string     `json:"code,omitempty"`  // error

	Addr string `json:"addr,omitempty"` // serving

	Progress *Progress `json:"progress,omitempty"` // progress

	Serving *Serving `json:"serving,omitempty"` // job

	Refused map[string]uint64 `json:"refused,omitempty"` // refused
}
