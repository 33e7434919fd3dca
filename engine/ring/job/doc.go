// Package job runs ring jobs in a runner process (engine/runner's child):
// the head's job, which drives a ring of devices for one generation and
// may keep it for the next, and the worker's, which serves the heads that
// ask. engine/runner parses the protocol's requests and calls in here;
// the ring's pure policies (pass sizes, kept prefixes, re-plans, silence
// limits) are engine/ring's, its event loop engine/ring/driver's, its
// windows engine/ring/ggmlengine's and its weight slices engine/slice's.
//
// # Head
//
// OpenHead maps the model for ring jobs (its own mapping, not the single
// device path's engine/head), with its vocabulary and the slice server the
// workers fetch from; it is kept between requests. Head.Request makes one
// request (ring_generate) the generation loop's head.Model: Begin dials
// every worker in the plan's peers with this device's identity (mutual
// TLS, each worker pinned to its device ID, all at once), starts the job
// on each (wire.JobStart; the worker answers JobAck), opens a second
// connection per worker (transport.PurposeSlice) on which it serves the
// weight slices, installs the plan and waits until it is up; Eval runs
// passes round the ring and returns the output window's logits, which the
// loop samples (engine/head.Run: prompt, sampler, context limits, UTF-8
// hold-back and stats exist once). Finish ends the request and returns
// the ring's part of its stats (Result): per device of the last plan its
// windows, measured compute ms per token, memory pressure (workers report
// theirs) and slice bytes fetched; re-plans, lost devices, passes, rows
// and a Trace of where the time went. When the job ends the head says
// goodbye and closes its links: the job ends on every worker.
//
// When workers are lost (a link closes, a malformed frame, silence past
// its limit: engine/ring's doc, "Silence"; the limits of a new job start
// from the silences earlier jobs of this process, head or worker, saw the
// same peers end in the last 5 minutes, at most 8 per peer (Gaps); a
// worker that cannot be reached or refuses the job) the head re-plans
// itself: Halda over the ring's problem without the lost devices, and
// without any the agent gave no address (ring.PlanWithout, the one
// re-plan; the agent hears of it only in the request's stats, so a loss
// crosses no process boundary). It connects any new workers, installs the
// plan and re-prefills the conversation so far from position 0: the
// prompt in the passes the first prefill used, then the tokens already
// generated one per pass, as they were decoded (up to 64 of them and 10 s
// at the measured speed; more go in batches), so that the re-prefill
// computes the unfaulted run's bits and, with greedy sampling, the reply
// is the one an unfaulted run gives. Prompts go round the ring in passes
// of at most 512 tokens, fewer (down to 32) when the compute buffers of a
// pass would take more than 2% of the head's memory (cgroup limit, else
// RAM), pipelined in micro-batches (ring.PlanMicroRows). Until a plan is
// up the head serves slices at GOGC 25 and then gives its free heap back
// to the OS; at the end of each job it logs its peak anonymous memory and
// its parts (Go heap, KV, compute buffers).
//
// The environment of the process switches two things for the plans this
// head installs (env.go): HOMERING_RING_HIDDEN=f16 sends hidden states as
// F16 (F32 by default), HOMERING_RING_PIPELINE=off sends each prefill pass
// as one batch.
//
// # Kept jobs
//
// A request with Params.KeepMS > 0 asks the head to hold the job idle that
// long after the request (links, plan, every device's windows and their KV
// caches) instead of ending it. Its KV caches hold the request (need =
// prompt + max_tokens + 1) and room for a next turn: max(2 × need, need +
// 128 + max_tokens + 1) positions, rounded up to 32, at most n_ctx
// (max_tokens 0: n_ctx). The head sends each worker wire.JobStart again
// with Idle set; the next request with the same plan (its ID aside:
// ring.SamePlacement), peers, identity, tick, prefetch, threads and n_ctx,
// whose prompt and max_tokens fit the caches, clears Idle and skips the
// prefill passes a fresh job would compute alike: batched passes round
// differently from other batches (on near-tie logits another token wins),
// so only full passes of the prompt's pass size from position 0 whose
// tokens the new prompt shares are kept (ring.KeptPrefix; a conversation
// past 512 tokens keeps all but its last pass; a shorter one keeps its
// links and windows and prefills again), the prefill resumes at the next
// (at least the last pass, for its logits; every window truncates its
// cache there) and the reply is a fresh job's, bit for bit. Anything else
// (another plan, a lost or departed worker, another model, settings or
// context size, a prompt that does not fit) ends the kept job and starts
// a fresh one, so the reply is a fresh job's. A kept job ends when its
// time is up, when a worker is lost, when the head's model closes
// (Head.Close), when Head.EndKept is called, and on memory: a device
// (head or worker) whose idle windows hold more than 5% of its memory
// (cgroup limit, else RAM) in KV caches and compute buffers, or whose
// available memory falls below 5%, lets the job go at once (checked every
// second while idle). A worker asked for a job by another head ends an
// idle job rather than refuse (and waits up to a second for a busy one
// that may be ending before it refuses); a worker holds an idle job 10
// minutes at most.
//
// # Worker
//
// StartWorker listens for heads with the device's identity, admitting only
// the allowed device IDs (and, for one job, the devices its head names),
// and runs one job at a time: on the head's plan it finds the layers of
// its windows in the slices of the cache directory and fetches into a new
// slice only the layers none of them holds (engine/slice: verified,
// resumable; a warm restart, or a re-plan that leaves it layers it held,
// fetches nothing and copies nothing; the model's index is fetched once
// per model), maps every slice it uses (weights stay page cache), opens
// each window as consecutive sub-windows, one per slice file it spans,
// prunes the cache (least recently used slices, to max(2 × its slices,
// ServeParams.CacheMax or 1 GiB) and 1 GiB free disk) and, while it does,
// dials its successor in the ring (wire.JobLink first) unless that is the
// head. A job ends when the head says goodbye, its link closes or it falls
// silent: the windows close and the slices are unmapped, and the worker
// waits for the next job.
package job
