package apitype

// ChatMessage is one turn of a conversation.
type ChatMessage struct {
	Role    string `json:"role"` // system, user, assistant; "tool" on the compatible APIs
	Content string `json:"content"`
	// ToolCalls are the calls of an assistant message and ToolCallID the
	// call a "tool" message answers (the compatible APIs' tool calling;
	// the control API has none).
	ToolCalls  []ToolCall `json:"-"`
	ToolCallID string     `json:"-"`
}

// Tool is a function the model may call: Function is the OpenAI/Ollama
// "function" object ({"name", "description", "parameters"}) as sent, JSON
// text with its members in their order (the chat templates print it).
type Tool struct {
	Function string `json:"function"`
}

// ToolCall is one call of a function; Arguments is a JSON object's text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatRequest is POST /api/v1/chat, and what the OpenAI, Anthropic and Ollama
// endpoints translate their requests into. Nil sampling fields take the
// engine's defaults (llama.cpp's).
type ChatRequest struct {
	ConversationID string        `json:"conversation_id,omitempty"` // names the generation for /api/v1/chat/stop
	Messages       []ChatMessage `json:"messages,omitempty"`
	System         string        `json:"system,omitempty"` // prepended as a system message when Messages has none
	// Prompt is raw text sent as is, without the chat template (completion
	// endpoints); used when Messages is empty.
	Prompt      string   `json:"prompt,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"` // 0: until the model stops or the context is full
	NumCtx      int      `json:"num_ctx,omitempty"`    // 0: the configured context length
	// FitContext: when the messages outgrow the context, the oldest are
	// left out of the prompt (a leading system message and the last message
	// always kept) and ChatStats.LeftOut says how many, instead of the
	// request failing (the UI; Ollama's API, as Ollama does). Without it a
	// prompt too long for the context fails with problem context_full (the
	// OpenAI and Anthropic APIs: their clients expect an error).
	FitContext bool `json:"fit_context,omitempty"`
	// LeftOut, with FitContext: how many messages the conversation's last
	// reply left out (its ChatStats.LeftOut). They stay out while the rest
	// fits, so that the prompt starts as it did and the cached prompt
	// serves the next turn.
	LeftOut int    `json:"left_out,omitempty"`
	Seed    *int64 `json:"seed,omitempty"`
	Model   string `json:"model,omitempty"` // "" or the served model's name
	// Think (Ollama's think): nil, as the model's template does; false
	// asks a reasoning model to answer without reasoning where its
	// template can (Qwen 3) and leaves any reasoning out of the reply;
	// true asks for reasoning, which a model without a reasoning format
	// cannot give (app/api answers 400).
	Think *bool `json:"think,omitempty"`
	// JSONSchema, when not empty, is the JSON schema the reply must follow
	// (structured output: OpenAI's response_format, Ollama's format); the
	// engine turns it into a grammar. Only the compatible APIs set it: the
	// control API and the web UI have no JSON mode.
	JSONSchema string `json:"-"`
	// Tools are the functions the model may call (the compatible APIs'
	// tools); with them, or with tool calls or results in Messages, the
	// prompt is rendered by the model's template family (engine/chat's
	// ToolTemplate) and the reply's calls parsed back (app/api/tools.go).
	Tools []Tool `json:"-"`
	// ForceCall makes the reply a call of one of Tools (OpenAI's
	// tool_choice "required", Anthropic's "any"), of the function named
	// ForceName when it is not "" (a named tool_choice): a grammar in the
	// template's call format, as JSONSchema is one. JSONSchema, SchemaBefore
	// and SchemaAfter are what app/api turns it into for the engine.
	ForceCall    bool   `json:"-"`
	ForceName    string `json:"-"`
	SchemaBefore string `json:"-"`
	SchemaAfter  string `json:"-"`
	// Ring options (homering chat, tests, the bench; ring.go). ModelPath is
	// a GGUF on the agent's machine used instead of the selected model.
	ModelPath  string `json:"model_path,omitempty"`
	Devices    string `json:"devices,omitempty"` // "all": every reachable device takes layers; "": Halda chooses
	Rounds     int    `json:"rounds,omitempty"`  // k, rounds per token; 0: Halda chooses
	NoPrefetch bool   `json:"no_prefetch,omitempty"`
}

// ChatToken is the SSE event `token` of /api/v1/chat.
type ChatToken struct {
	Text string `json:"text"`
	// Thinking, when not "", is a piece of the reply's reasoning instead
	// (a model whose template reasons apart: Qwen 3, QwQ, R1, gpt-oss);
	// Text is "" then.
	Thinking string `json:"thinking,omitempty"`
}

// ChatStats describe a finished generation.
type ChatStats struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CachedTokens     int     `json:"cached_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TokensPerSecond  float64 `json:"tokens_per_second"` // decode speed
	PromptPerSecond  float64 `json:"prompt_per_second"`
	PromptMS         float64 `json:"prompt_ms"`
	TotalMS          float64 `json:"total_ms"`
	// StopReason: "stop" (the model ended its turn), "length" (max_tokens or
	// the context is full), "cancelled" (stopped).
	StopReason string `json:"stop_reason"`
	Model      string `json:"model"`
	// LeftOut is how many of the request's oldest messages (after a leading
	// system message, which is always kept) were left out of the prompt
	// because the conversation outgrew the context (ChatRequest.FitContext).
	LeftOut int `json:"left_out,omitempty"`
	// TTFTMS is the time from the request to the first token; TPOTMS the
	// mean time per output token after it.
	TTFTMS float64 `json:"ttft_ms,omitempty"`
	TPOTMS float64 `json:"tpot_ms,omitempty"`
	// PlanMS is the time from the request to the engine being given its
	// job (settings, planning, asking workers); StartMS to the engine's
	// first prompt pass starting (also loading, a ring job's links): what
	// the turn cost before any compute.
	PlanMS  float64 `json:"plan_ms,omitempty"`
	StartMS float64 `json:"start_ms,omitempty"`
	// Drafted is how many tokens a speculative draft proposed (Settings'
	// draft; greedy chats only) and DraftAcceptance the share of them the
	// model accepted.
	Drafted         int     `json:"drafted,omitempty"`
	DraftAcceptance float64 `json:"draft_acceptance,omitempty"`
	// Ring is the ring this generation ran on; nil when on this device
	// alone, and then Alone may say why (no device reachable, Halda keeps
	// the model here, …).
	Ring  *RingRun `json:"ring,omitempty"`
	Alone string   `json:"alone,omitempty"`
}

// ChatDone is the SSE event `done` of /api/v1/chat.
type ChatDone struct {
	Stats ChatStats `json:"stats"`
}

// ChatStopRequest is POST /api/v1/chat/stop. An empty ConversationID stops
// every running generation.
type ChatStopRequest struct {
	ConversationID string `json:"conversation_id,omitempty"`
}

// ChatStopped answers ChatStopRequest.
type ChatStopped struct {
	Stopped int `json:"stopped"` // generations told to stop
}

// ServedModel is the model the chat endpoints answer with.
type ServedModel struct {
	Name     string `json:"name"` // file name without .gguf
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Modified int64  `json:"modified"` // Unix seconds
}

// ChatActive is GET /api/v1/chat/active.
type ChatActive struct {
	Running int           `json:"running"` // generations running now
	Models  []ServedModel `json:"models"`  // what chat answers with
}
