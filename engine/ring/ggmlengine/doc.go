// Package ggmlengine is the ring driver's Engine over engine/ggml: the
// adapter between a device's plan windows (engine/ring/wire) and the
// windows engine/ggml computes, kept apart from the driver so that the
// driver is only its event loop and engine/ggml knows nothing of the ring.
//
// # Engine
//
// GGML opens one Window per round for this device's windows (the head's
// round-0 window with the token embedding), and on the head an output-only
// window [L, L) that turns the last hidden state into logits, sampled
// greedily (argmax, lowest id on ties) unless Sample is set. Evaluations are
// split into batches of at most ggml.MaxBatch rows. Its KV caches follow the
// positions the activations carry (KVTruncate when a pass starts before the
// cache end, as after a re-prefill). A worker whose layers lie in several
// slice files (GGML.Parts) runs each window as consecutive sub-windows, one
// per file it spans, each with its own KV cache, passing hidden states from
// one to the next in process: the same bits as one window (engine/ggml
// proves splits exact). Prefetch and Release act on every file a window
// spans. Memory reports the windows' KV caches and compute buffers.
//
// Measured routing (a MoE model, GGML.Routing set): Prepare gives the
// mapped models the routing the device kept from its earlier jobs, so that
// Prefetch warms the always-read tensors and the experts routed more than
// average (ggml.Window.PrefetchRanges), and counts the routers' picks of the
// first CountComputes computes per window, which it hands back to the store
// for the next job and the planner (engine/ring/job keeps them in the
// config directory).
//
// GPU layers: the plan's wire.Device.GPULayers (Halda's n_m) puts the first
// n of each of this device's windows on its GPU (ggml.WindowParams.GPULayers,
// split across sub-windows like the layers themselves); the rest of the
// window and the head's output window stay on the CPU, where Halda charges
// them. A plan with GPU layers on a process without a GPU backend loaded
// fails Prepare (ggml.ErrNoGPU), so the device refuses the plan (PlanAck)
// rather than run it slower than planned.
package ggmlengine
