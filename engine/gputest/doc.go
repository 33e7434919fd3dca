// Package gputest holds only tests: it runs the window engine's GPU path
// (engine/ggml with a ggml backend library loaded: libggml-vulkan.so on Mesa's
// lavapipe in CI, libggml-cuda.so on a CUDA machine) against the same
// windows on the CPU. It has no code of its own and nothing imports it. It is
// a package of its own because loading a backend changes the whole process
// (GPUCount, every later window's choices): engine/ggml's own tests must keep
// seeing a CPU-only process.
//
// The library directory comes from HOMERING_GPU_LIB_DIR, which build/test.sh
// sets from build/gpu-lib.sh vulkan's output (on a Mac, "builtin": Metal is
// linked in; the macOS job of .github/workflows/release.yml runs it so). Set but empty, without a
// backend library, or with no GPU device after loading, every test fails with
// a sentence saying which; only a plain `go test` with the variable unset
// skips them. On lavapipe (a CPU-type Vulkan device) ggml-vulkan needs
// GGML_VK_VISIBLE_DEVICES=0, and Mesa compiles each pipeline once into
// MESA_SHADER_CACHE_DIR (~40 s cold for the first type, milliseconds warm):
// TestMain sets both when unset, the cache under the user's cache directory
// (homering/mesa-shader-cache) so that it outlives the run.
//
// What the tests hold the GPU path to:
//
//   - Logits: a window with GPU layers (all of them and the output head,
//     the middle two, and a GPU window chained to a CPU window) agrees with
//     the CPU-only window to a per-type tolerance on generated llama, qwen2
//     and qwen3 models in F32, F16, Q8_0, Q4_0, Q4_K and Q6_K, over a
//     40-token prompt and 8 decode steps. The tolerances are stated and
//     measured in gpu_test.go.
//   - Generation: the greedy 32-token continuation of stories260K with every
//     layer and the output head on the GPU equals the CPU's.
//   - Placement: a window with contiguous GPU layers splits its graph into
//     at most 3 runs (CPU, GPU, CPU) for batches of 1, 32 and 64 tokens: the
//     CPU layers' operations are never offloaded to the GPU (op offload on
//     gives 10 to 32 splits; see TestGraphSplits).
//   - KV truncation on the GPU: a truncated cache re-evaluates to the same
//     bits as a fresh window.
package gputest
