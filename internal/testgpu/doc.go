// Package testgpu is the tests' one way to a ggml GPU backend library: the
// directory build/test.sh names in HOMERING_GPU_LIB_DIR (build/gpu-lib.sh
// vulkan's output, run on Mesa's lavapipe in CI), checked, and the
// environment lavapipe needs (GGML_VK_VISIBLE_DEVICES=0: ggml-vulkan skips
// CPU-type devices otherwise; MESA_SHADER_CACHE_DIR under the user's cache,
// so Mesa's pipeline compiles, ~40 s per type cold, outlive the run).
//
// The rule it enforces: with HOMERING_GPU_LIB_DIR unset (a plain go test) GPU
// tests skip; set, a missing library or a GPU that does not appear fails
// them with a sentence saying which, so CI never passes by skipping.
//
// Load loads the backend into the test process: only a package of GPU tests
// may call it (ggml's backend registry is process-wide, and every later
// window would see the GPU). Tests that run a GPU in a child process (the
// homering binary) call Need and pass Env to the child. Only tests import
// this package.
package testgpu
