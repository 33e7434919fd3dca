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
// Head: ring_generate is a generation whose layers run on a ring of devices.
// The child maps the model (load.model; its own mapping, not the load op's
// engine/head), dials every worker in ring.peers with the device identity in
// ring.identity (mutual TLS, each worker pinned to its device ID), starts the
// job on each (wire.JobStart; the worker answers JobAck), opens a second
// connection per worker (transport.PurposeSlice) on which it serves the
// weight slices, installs ring.plan and streams tokens as generate does:
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
// When workers are lost (a link closes, a malformed frame, silence past
// its limit: engine/ring's doc, "Silence"; the limits of a new job start
// from the silences earlier jobs of this process, head or worker, saw the
// same peers end in the last 5 minutes, at most 8 per peer; a worker that
// cannot be reached or refuses the job) the child re-plans itself: Halda
// over the ring's problem without the lost devices, and without any the
// agent gave no address (ring.PlanWithout, the one re-plan; the agent hears
// of it only in the done event's stats, so a loss crosses no process
// boundary). It connects any new workers, installs the plan and re-prefills the
// conversation so far from position 0: the prompt in the passes the first
// prefill used, then the tokens already streamed one per pass, as they were
// decoded (up to 64 of them and 10 s at the measured speed; more go in
// batches), so that the re-prefill computes the unfaulted run's bits and,
// with greedy sampling, the reply is the one an unfaulted run gives. Prompts go round the ring in passes of at most 512
// tokens, fewer (down to 32) when the compute buffers of a pass would take
// more than 2% of the head's memory (cgroup limit, else RAM). Until a plan
// is up the head serves slices at GOGC 25 and then gives its free heap
// back to the OS; at the end of each job it logs its peak anonymous memory
// and its parts (Go heap, KV, compute buffers). generate and ring_generate
// run the same generation loop (engine/head.Run: prompt, sampler, context
// limits, UTF-8 hold-back, stats): on the ring its Model is the head job,
// whose output window hands the head's logits to the loop, which samples
// them as generate does. Stats.devices has, per device of the last plan, its
// windows, measured compute ms per token, memory pressure (workers report
// theirs) and slice bytes fetched. When the generation ends the head says
// goodbye and closes its links: the job ends on every worker.
//
// Kept jobs: a ring_generate with ring.keep_ms > 0 asks the head to hold
// the job idle that long after the request (links, plan, every device's
// windows and their KV caches) instead of ending it. Its KV caches hold
// the request (need = prompt + max_tokens + 1) and room for a next turn:
// max(2 × need, need + 128 + max_tokens + 1) positions, rounded up to 32,
// at most n_ctx (max_tokens 0: n_ctx). The head sends each
// worker wire.JobStart again with Idle set; the next ring_generate with
// the same plan (its ID aside), peers, identity, tick, prefetch, threads
// and n_ctx, whose prompt and max_tokens fit the caches, clears Idle and
// skips the prefill passes a fresh job would compute alike: batched
// passes round differently from other batches (on near-tie logits another
// token wins), so only full passes of the prompt's pass size from position
// 0 whose tokens the new prompt shares are kept (a conversation past 512
// tokens keeps all but its last pass; a shorter one keeps its links and
// windows and prefills again), the prefill resumes at the next (at least
// the last pass, for its logits; every window truncates its cache there)
// and the reply is a fresh job's, bit for bit. stats.cached_tokens counts
// the kept positions, stats.passes and stats.rows what went round. Anything else
// (another plan, a lost or departed worker, another model, settings or
// context size, a prompt that does not fit) ends the kept job and starts
// a fresh one, so the reply is a fresh job's. A kept job ends when its
// time is up, when a worker is lost, when the head's model closes (load,
// unload, another model) and on memory: a device (head or worker) whose
// idle windows hold more than 5% of its memory (cgroup limit, else RAM)
// in KV caches and compute buffers, or whose available memory falls
// below 5%, lets the job go at once (checked every second while idle).
// A worker asked for a job by another head ends an idle job rather than
// refuse (and waits up to a second for a busy one that may be ending
// before it refuses); a worker holds an idle job 10 minutes at most. The parent ends a
// kept job at once with
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
// the process on macOS). It runs one job at a time: on the head's PlanInstall
// it finds the layers of its windows in the slices of serve.cache_dir and
// fetches into a new slice only the layers none of them holds (engine/slice:
// verified, resumable; a warm restart, or a re-plan that leaves it layers
// it held, fetches nothing and copies nothing), maps every slice it uses
// (weights stay page cache), opens each window as consecutive sub-windows,
// one per slice file it spans, prunes the cache (least recently used
// slices, to max(2 × its slices, serve.cache_max or 1 GiB) and 1 GiB free
// disk) and dials its successor in the ring (wire.JobLink first) unless
// that is the head. A job ends when the
// head says goodbye, its link closes or it falls silent: the windows close
// and the slice is unmapped, and the child waits for the next job.
package runner
