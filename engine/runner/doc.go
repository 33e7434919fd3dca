// Package runner is both sides of the `homering runner` child process, which
// owns the engine (ggml, llama.cpp, the mmap'd model and its KV cache) so that
// a C abort in the engine never takes the agent down (STYLE lesson 9).
//
// # Processes
//
// The agent runs a Supervisor. On the first request that needs a model it
// starts the child (Options.Command, normally `homering runner`), loads the
// model and streams a generation. The child serves one generation at a time:
// on one engine/head (the single-device path: the whole model as one
// engine/ggml window), or as the head of a ring of devices (ring_generate,
// below). Beside that it may serve as a worker in other heads' rings
// (serve_ring).
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
// GPUs: at start the child loads ggml's GPU backend libraries (LoadGPU:
// none with HOMERING_GPU=off, which the agent sets when this device's gpu
// setting is off; else HOMERING_GPU_DIR, else the versioned directory
// beside the executable, GPUDirs). Backends load once per process, so the
// agent restarts the child (Supervisor.Restart) when the setting changes.
// load.gpu_layers puts the model's first layers on the GPU (the planner's n
// for this device alone), load.output_gpu its output head; a ring plan's
// wire.Device.GPULayers places each window's first layers (engine/ring/driver).
// Without a GPU either is a load error, never a silent CPU run.
//
// # Wire format (version 2)
//
// JSON lines: one JSON object per line, UTF-8, at most MaxLine bytes. The
// child keeps the real stdout for the protocol and points file descriptor 1 at
// stderr before any engine code runs, so C code that prints cannot corrupt it.
//
// Child → parent, first line, before reading anything:
//
//	{"type":"hello","proto":2,"pid":1234}
//
// Parent → child (Request):
//
//	{"id":1,"op":"load","load":{"model":"/m.gguf","n_ctx":2048,"threads":4,"gpu_layers":8}}
//	{"id":2,"op":"generate","generate":{"messages":[{"role":"user","content":"Hi"}],
//	      "max_tokens":64,"temperature":0.8,"top_k":40,"top_p":0.95,"min_p":0.05,
//	      "repeat_penalty":1,"repeat_last_n":64,"seed":7}}
//	{"id":3,"op":"stop","target":2}
//	{"id":4,"op":"unload"}
//
// Structured output: generate.json_schema (a JSON schema, turned into a
// grammar by llama.cpp's json-schema-to-grammar) or generate.grammar (GBNF)
// constrains the reply, on one device and on a ring: tokens the grammar
// refuses are never sampled, and the model's end of generation only once
// the grammar is complete. One that cannot be built is a bad_request
// before anything is evaluated.
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
// other than stop, plan and serve_ring are refused with code "busy" while a
// generation runs. Codes: "busy", "not_loaded", "bad_request", "load",
// "generate", "ring".
//
// # The ring (piped-ring parallelism across devices, engine/ring)
//
// The ring's jobs run in engine/ring/job, whose doc says what they do; the
// child parses the requests below, calls into it and turns what it
// reports into events. Its types on the pipe (RingPeer, DeviceStats,
// ServeParams, Progress, RingTrace) are that package's, aliased here.
//
// Head: ring_generate is a generation whose layers run on a ring of
// devices. The child maps load.model for ring jobs (kept until another
// model, load or unload), dials every worker in ring.peers with the device
// identity in ring.identity, serves them their weight slices, installs
// ring.plan and streams tokens as generate does, on the same generation
// loop (engine/head.Run; the ring job is its Model):
//
//	{"id":5,"op":"ring_generate","load":{"model":"/m.gguf","n_ctx":2048},
//	      "ring":{"plan":{"ID":1,"K":1,"Layers":5,"NEmbd":64,"DType":1,
//	              "Devices":[{"ID":"HEAD-ID","Windows":[{"Start":0,"End":2}]},
//	                         {"ID":"WORKER-ID","Windows":[{"Start":2,"End":5}]}]},
//	              "peers":[{"id":"WORKER-ID","addr":"192.168.1.7:41234"}],
//	              "problem":{"devices":[…],"model":{…},…},
//	              "identity":"/home/me/.config/homering","tick_ms":500},
//	      "generate":{…}}
//	{"id":5,"type":"progress","progress":{"device":"WORKER-ID","done":4194304,"total":96468992}}
//	                                          (weights sent to a worker; a few a second at most)
//	{"id":5,"type":"token",…}                 (zero or more)
//	{"id":5,"type":"done","stats":{…,"devices":[…],"replans":1,"lost":["WORKER-ID"],
//	                               "plan":{…},"loss_to_token_ms":812}}
//
// When workers are lost the child re-plans itself (ring.PlanWithout over
// ring.problem without them), re-prefills and goes on: the agent hears of
// it only in the done event's stats (replans, lost, plan,
// loss_to_token_ms), so a loss crosses no process boundary.
// Stats.devices has, per device of the last plan, its windows, measured
// compute ms per token, memory pressure and slice bytes fetched;
// stats.trace where the time went before and during the prompt.
//
// Kept jobs: a ring_generate with ring.keep_ms > 0 (at most an hour) asks
// the head to hold the job idle that long after the request; the next
// ring_generate with the same plan (its ID aside), peers, identity, tick,
// prefetch, threads and n_ctx, whose prompt fits its caches, reuses it and
// skips the prefill passes a fresh job would compute alike, so the reply
// is a fresh job's, bit for bit (stats.cached_tokens counts the kept
// positions, stats.passes and stats.rows what went round); anything else
// ends it and starts a fresh job. The parent ends a kept job at once with
//
//	{"id":9,"op":"ring_end"}  →  {"id":9,"type":"ended"}
//
// Worker: serve_ring makes the child listen for heads (serve.listen,
// default "[::]:0") with the identity in serve.identity, admitting only the
// device IDs in serve.allowed, and answer with its address:
//
//	{"id":7,"op":"serve_ring","serve":{"identity":"/cfg","allowed":["HEAD-ID"],
//	      "cache_dir":"/cache/slices","cache_max":0,"listen":"[::]:0","threads":2}}
//	{"id":7,"type":"serving","addr":"[::]:41234"}
//	{"id":8,"op":"stop","target":7}  →  {"id":7,"type":"done","stats":{"reason":"cancelled"}}
//
// Serving runs beside generations and emits nothing else until it stops. A
// serving child lowers its CPU priority (nice 10 on every thread on Linux,
// the process on macOS) and runs one job at a time (engine/ring/job's
// Worker: slices fetched into serve.cache_dir and cached, windows opened,
// the successor dialled). A job ends when the head says goodbye, its link
// closes or it falls silent; the child waits for the next job.
//
// Refusals: unasked, at most once a second, the child says what its ring
// links (as head and as worker) refused since it last said, by reason:
// connections the transport refused, frames of a plan or job this device
// does not have, frames over the size limit:
//
//	{"id":0,"type":"refused","refused":{"plan not installed":3}}
//
// The agent adds them to the counts `homering doctor` prints
// (Options.OnRefused).
package runner
