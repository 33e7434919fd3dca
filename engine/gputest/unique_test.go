package gputest

import (
	"os"
	"path/filepath"
	"testing"

	"homering/engine/ggml"
)

// TestOneCardListedOnce: a card that two backend libraries see (CUDA and
// Vulkan on an NVIDIA machine) is one GPU to every part of the engine.
// Here a second copy of the run's Vulkan library registers the same
// lavapipe device again: the registry holds it twice, ggml.GPUCount and
// GPUDevices once (same UUID or PCI bus id; engine.c's same_card). Which
// library wins (CUDA over Vulkan) follows gpu_rank; only one library kind
// runs here. Loaded last of this package's tests (its file name sorts
// after the others' and the copy adds no device), it changes nothing the
// others see.
func TestOneCardListedOnce(t *testing.T) {
	needGPU(t)
	before := ggml.GPUCount()
	if before < 1 || ggml.GPURegistered() != before {
		t.Fatalf("before the copy: %d GPUs listed, %d registered; want them equal and at least 1", before, ggml.GPURegistered())
	}
	dir := os.Getenv("HOMERING_GPU_LIB_DIR")
	lib, err := os.ReadFile(filepath.Join(dir, "libggml-vulkan.so"))
	if err != nil {
		t.Fatal(err)
	}
	second := t.TempDir()
	if err := os.WriteFile(filepath.Join(second, "libggml-vulkan.so"), lib, 0o755); err != nil {
		t.Fatal(err)
	}
	after := ggml.LoadBackends(second)
	t.Logf("GPUs listed %d → %d; registered %d", before, after, ggml.GPURegistered())
	if ggml.GPURegistered() != 2*before {
		t.Fatalf("the second library registered %d GPU devices in all, want %d: the test measures nothing", ggml.GPURegistered(), 2*before)
	}
	if after != before || len(ggml.GPUDevices()) != before {
		t.Errorf("one card seen by two libraries is listed %d times (GPUDevices %d), want %d", after, len(ggml.GPUDevices()), before)
	}
}
