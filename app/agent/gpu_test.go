package agent

import (
	"log/slog"
	"os/exec"
	"slices"
	"testing"

	"homering/app/config"
)

// The gpu setting reaches the children the agent starts (its engine and its
// background measurement) as HOMERING_GPU=off: they load no GPU backend.
func TestGPUSettingReachesChildren(t *testing.T) {
	dir := t.TempDir()
	b := &Agent{dir: dir, log: slog.New(slog.DiscardHandler)}
	for _, gpu := range []string{"", config.GPUOn, config.GPUOff} {
		if err := config.SaveSettings(dir, config.Settings{ContextTokens: 512, GPU: gpu}); err != nil {
			t.Fatal(err)
		}
		cmd := b.gpuSetting(exec.Command("homering", "runner"))
		if off := slices.Contains(cmd.Env, "HOMERING_GPU=off"); off != (gpu == config.GPUOff) {
			t.Errorf("gpu=%q: the child's environment says HOMERING_GPU=off: %v", gpu, off)
		}
	}
}
