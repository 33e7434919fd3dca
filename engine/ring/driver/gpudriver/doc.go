// Package gpudriver holds only tests: the ring driver's GGML engine
// (engine/ring/ggmlengine) with
// a plan that gives devices GPU layers (wire.Device.GPULayers, Halda's n_m),
// run for real on a GPU backend (Vulkan on Mesa's lavapipe in CI, through
// internal/testgpu) against the same plan on the CPU: the first n layers of
// each window run on the GPU, and the ring's greedy tokens are the CPU's.
// It is a package of its own because loading a backend changes the whole
// process: engine/ring/ggmlengine's own tests prove that a plan with GPU
// layers is refused by a process without a GPU, which needs a process that
// has none.
package gpudriver
