// Package api serves the agent's control API over HTTP on loopback, for the
// CLI, the tray and the window (all through app/api/client). It is a thin
// layer over the one owner of the agent's state (app/agent): it decodes
// requests, asks the agent, and picks HTTP statuses.
//
// Every endpoint is under /api/v1 and needs the per-run token written, with
// the address, to api.json in the config directory (0600): "Authorization:
// Bearer TOKEN". Bodies are JSON (app/api/apitype); errors are
// apitype.Error{error: one sentence for a person} with a 4xx/5xx status,
// an unknown path's 404 and another method's 405 (with Allow) included;
// without the token every /api/v1 path is 401.
//
//	GET  /api/v1/status          apitype.Status
//	GET  /api/v1/peers           apitype.Peers
//	POST /api/v1/peers/add       AddPeerRequest → Peer   (add by address)
//	POST /api/v1/peers/remove    PeerRequest → {}
//	POST /api/v1/peers/probe     PeerRequest → Probe     (try a link; doctor DEVICE)
//	GET  /api/v1/pair            PairStatus
//	POST /api/v1/pair/show       {} → PairShow           (on the device to trust)
//	POST /api/v1/pair/enter      PairEnterRequest → Peer (on the head)
//	POST /api/v1/unpair          PeerRequest → Peer
//	POST /api/v1/contribute      ContributeRequest → Status
//	GET  /api/v1/doctor          Doctor
//	GET  /api/v1/ring            RingStatus: the last ring this agent ran as head (homering status)
//	GET  /api/v1/watch           text/event-stream of Event, one "data: {json}" per event
//
// The web UI (ui.go and the files it names) adds:
//
//	GET  /                       the embedded app (frontend/dist); /?token=T sets the
//	                             token cookie (HttpOnly, SameSite=Strict) and redirects to /
//	GET  /api/v1/settings        Settings (settings.json; the name lives in config.json)
//	POST /api/v1/settings        Settings → Settings (400 with every problem in one sentence each)
//	GET  /api/v1/models          Models: GGUFs in the model folder, Ollama, LM Studio and the
//	                             Hugging Face cache, each with a Halda fit label
//	GET  /api/v1/plan            Plan: the device map (the agent's planner's plan for the
//	                             selected model, calibrated by the ratios the agent learnt
//	                             from its runs, the uncalibrated prediction beside)
//	GET  /api/v1/live            text/event-stream of Live ("event: live"): at once, after
//	                             node events or Work changes (batched 150 ms) and every 2 s
//	                             (memory, heartbeat); Live.Work is the progress bars (agent.Work;
//	                             a model load's bar fills against load-times.json, the
//	                             background measurement's counts steps: Task.Unit "steps")
//	GET  /api/v1/conversations   []ConversationSummary, newest first
//	GET, PUT, DELETE /api/v1/conversations/{id}   Conversation (conversations/ID.json)
//
// Chat (chat.go) runs on the agent's Chatter (the engine child,
// engine/runner, via app/agent/chat.go):
//
//	POST /api/v1/chat            ChatRequest → text/event-stream: "event: token" ChatToken …,
//	                             then "event: done" ChatDone{stats} or "event: error" Error
//	POST /api/v1/chat/stop       ChatStopRequest → ChatStopped (conversation_id "" stops all)
//	GET  /api/v1/chat/active     ChatActive (generations running, the served model)
//
// Compatible APIs (chat.go and compat.go, translations in app/api/openai,
// anthropic, ollama), outside /api/v1 so that stock clients find them:
//
//	POST /v1/chat/completions    OpenAI, stream (SSE "data:" chunks, then [DONE]) or not
//	POST /v1/completions         OpenAI text completion (raw prompt, no chat template)
//	GET  /v1/models              OpenAI model list; Anthropic's shape when the request
//	                             sends anthropic-version
//	GET  /v1/models/{id}         one model, or the API's 404
//	POST /v1/messages            Anthropic Messages, stream (message_start … message_stop) or not
//	POST /api/chat               Ollama chat, NDJSON stream (default) or one object
//	POST /api/generate           Ollama generate (raw or templated prompt)
//	GET  /api/tags               Ollama model list
//	POST /api/show               Ollama model details: the GGUF's metadata as model_info
//	GET  /api/ps                 Ollama's loaded models: the one that answered last
//	GET  /api/version            the pinned ollama module's version (ollama.Version)
//
// From loopback they need no token, as Ollama's do, but Host and Origin must
// be local (no DNS rebinding, no cross-site fetch). From another address
// (when Settings expose the API) they need the settings' API key as
// "Authorization: Bearer KEY" or "x-api-key: KEY".
//
// The model lists hold the selected model, then every usable GGUF the model
// list finds (the model folder, Ollama's, LM Studio's and the Hugging Face
// stores), by the model list's names; a request naming another model than
// the selected one loads that one (the engine holds one model at a time).
// A name matches case aside, with or without .gguf, and Ollama's spellings
// of one model (llama3.2, llama3.2:latest, registry.ollama.ai/library/…);
// "" is the selected model. A name no model has is the API's own 404
// (OpenAI's model_not_found, Ollama's "model 'x' not found", Anthropic's
// not_found_error), never another model's answer. So are unknown paths
// under /v1 and /api (outside /api/v1), and a known path's other methods
// are 405 with Allow, in the same shapes. A max_tokens (num_predict) beyond
// the context runs with the context's size and the answer carries
// X-Homering-Max-Tokens-Capped: N (MaxTokensCappedHeader); such a reply
// ends when the context is full, with finish_reason/done_reason "length"
// and Anthropic's stop_reason "model_context_window_exceeded".
//
// Structured output: OpenAI's response_format json_object (any JSON
// object) and json_schema (json_schema.schema), and Ollama's format "json"
// or a JSON schema, become ChatRequest.JSONSchema; the engine child turns
// it into llama.cpp's grammar and samples only what the grammar allows, on
// one device and on a ring, ending the reply once the JSON is complete
// (or cut by max_tokens, finish_reason "length"). A schema the engine
// cannot turn into a grammar is the API's own 400, streamed or not.
// Anthropic's Messages API has no JSON mode.
//
// Tool calling (tools.go, app/agent/tools.go): OpenAI's and Ollama's tools, Anthropic's client
// tools, assistant tool calls (tool_calls, tool_use) and results (the tool
// role with tool_call_id, tool_result blocks) become ChatRequest.Tools and
// ChatMessage.ToolCalls/ToolCallID. llama.cpp's template function takes
// only roles and contents, so the agent renders such a request by the GGUF
// template's family (engine/chat.ToolTemplate: Llama 3.1-3.3, Qwen 2.5/3,
// Mistral v0.3 and Nemo, byte for byte as their Jinja templates) into a raw prompt
// (not trimmed to fit the context). The reply streams through the family's
// ToolParser, which holds back anything that may start a call, and its
// calls end the answer in the API's shape: OpenAI message.tool_calls
// (arguments a JSON string; streamed as a delta with id, type and name,
// then deltas with fragments of the arguments) with finish_reason
// "tool_calls"; Ollama message.tool_calls (arguments an object; streamed
// in an object before the last); Anthropic tool_use blocks (streamed as
// content_block_start, one input_json_delta and content_block_stop each)
// with stop_reason "tool_use". tool_choice auto and none are followed;
// OpenAI's required and named function force a call by grammar
// (engine/chat.ForceCall, as JSONSchema is one); Anthropic's any and tool
// are refused. A template of no such family is
// the API's 400: "This model's chat template has no tool calling (…)".
// Ollama's /api/show lists the "tools" capability of a model that has it.
//
// Thinking (tools.go's replyParse): a reply to messages from a model whose
// template reasons apart from its answer (engine/chat.ThinkFormatOf: Qwen
// 3, QwQ and R1's <think>…</think>, gpt-oss's analysis channel) has its
// thinking split off by a ThinkParser before the tool parser, so no
// thinking reaches the calls or the answer. It goes out as OpenAI's
// reasoning_content (message, stream deltas), Ollama's thinking (message,
// generate), the UI chat's token events with thinking; Anthropic's clients
// get the answer alone (a thinking block carries a signature a local model
// cannot give). Other models and raw prompts get the reply byte for byte.
// Ollama's think: false answers without reasoning where the template can
// (Qwen 3's empty block) and leaves out what a forced one (R1 distills)
// writes; true on a model without a reasoning format is Ollama's 400; a
// level (gpt-oss) counts as true. Templates whose generation prompt opens
// the block (R1 distills, QwQ) get it in the prompt as their Jinja writes
// it, and their replies are thinking from the first token
// (engine/chat.ReplyOpening).
//
// Every /api/v1 call also accepts the token cookie instead of the header;
// the app's static files need no token (they hold no secrets).
//
// There is no separate "confirm" step: the code is checked by SPAKE2 on both
// devices (see discovery/identity), so entering it on the head is the
// confirmation, and the device that showed it reports the outcome in
// GET /api/v1/pair.
package api
