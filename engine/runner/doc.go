// Package runner is both sides of the `homering runner` child process, which
// owns the engine (ggml, llama.cpp, the mmap'd model and its KV cache) so that
// a C abort in the engine never takes the agent down (STYLE lesson 9).
//
// # Processes
//
// The agent runs a Supervisor. On the first request that needs a model it
// starts the child (Options.Command, normally `homering runner`), loads the
// model and streams a generation. The child serves one generation at a time on
// one engine/head (the single-device path: the whole model as one
// engine/ggml window) until the ring lands.
//
// When the child dies (a C abort, SIGKILL by the OOM killer, a Go panic) the
// call in flight fails with a *DiedError that carries the exit status and the
// last lines the child wrote to stderr; the next call starts a fresh child.
// Restarts are spaced by a backoff that doubles with each death in a row
// (Options.MinBackoff up to MaxBackoff) and resets after a generation that
// ends normally, so a model that crashes at load cannot spin the CPU.
// The child also exits when its stdin closes, and on Linux when the agent
// dies (PR_SET_PDEATHSIG), so no orphan keeps the model mapped.
//
// # Wire format (version 1)
//
// JSON lines: one JSON object per line, UTF-8, at most MaxLine bytes. The
// child keeps the real stdout for the protocol and points file descriptor 1 at
// stderr before any engine code runs, so C code that prints cannot corrupt it.
//
// Child → parent, first line, before reading anything:
//
//	{"type":"hello","proto":1,"pid":1234}
//
// Parent → child (Request):
//
//	{"id":1,"op":"load","load":{"model":"/m.gguf","n_ctx":2048,"threads":4}}
//	{"id":2,"op":"generate","generate":{"messages":[{"role":"user","content":"Hi"}],
//	      "max_tokens":64,"temperature":0.8,"top_k":40,"top_p":0.95,"min_p":0.05,
//	      "repeat_penalty":1,"repeat_last_n":64,"seed":7}}
//	{"id":3,"op":"stop","target":2}
//	{"id":4,"op":"unload"}
//
// Child → parent (Event), every event names the request it answers:
//
//	{"id":1,"type":"loaded","model":{"path":"/m.gguf","arch":"llama","layers":5,"n_ctx":2048,"vocab":512}}
//	{"id":2,"type":"token","token":{"id":42,"text":"Hi"}}     (zero or more)
//	{"id":2,"type":"done","stats":{…,"reason":"stop"}}       (reason: stop, length, cancelled)
//	{"id":4,"type":"unloaded"}
//	{"id":N,"type":"error","error":"…","code":"busy"}         (ends request N)
//
// A generate ends with exactly one done or error. stop has no answer of its
// own: the generation it names ends with done, reason "cancelled". Requests
// other than stop are refused with code "busy" while a generation runs.
// Codes: "busy", "not_loaded", "bad_request", "load", "generate".
package runner
