package planner

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"homering/engine/profile"
	"homering/halda"
)

// CachedSelf returns a Self function for Options: this device's newest
// valid cached profile in configDir (engine/profile's cache, written by
// `homering profile` and the agent's background measurement), read again
// only when the cache directory changed, since reading checks every entry's
// checksum and the device map plans every few seconds. Without one it gives
// (zero, false): the planner's default with this device's memory.
// load nil means profile.LoadCached.
func CachedSelf(configDir string, load func(string) (profile.Profile, bool, error), log *slog.Logger) func() (halda.Device, bool) {
	if load == nil {
		load = profile.LoadCached
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var mu sync.Mutex
	var stamp time.Time // the cache directory's modification time when read
	var read bool
	var dev halda.Device
	var ok bool
	return func() (halda.Device, bool) {
		mu.Lock()
		defer mu.Unlock()
		var now time.Time
		if fi, err := os.Stat(filepath.Join(configDir, profile.CacheDirName)); err == nil {
			now = fi.ModTime()
		}
		if read && now.Equal(stamp) {
			return dev, ok
		}
		p, found, err := load(configDir)
		if err != nil {
			log.Warn("cannot read the cached device profile; planning with a default", "err", err)
		}
		read, stamp, ok = true, now, found && err == nil
		dev = halda.Device{}
		if ok {
			dev = p.Device("")
		}
		return dev, ok
	}
}

// WithoutGPU is d with every GPU field cleared: a device whose gpu setting
// is off (config.Settings.UseGPU) is planned as the CPU-only device its
// engine then is, so Halda gives it no GPU layers its runner would refuse.
func WithoutGPU(d halda.Device) halda.Device {
	d.GPU, d.UMA, d.GPUFlops, d.GPUReadBytesPerSec = "", false, nil, 0
	d.KVCopyGPUSec, d.HostToGPUSec, d.GPUToHostSec = 0, 0, 0
	d.VRAMAvailable, d.MetalBudget = 0, 0
	return d
}

// GPUOf is the kind of d's GPU as plans count on it ("" none) and the
// memory it reported free for GPU layers: VRAM, or Metal's working-set
// budget (capped by Halda at its RAM).
func GPUOf(d halda.Device) (kind string, freeBytes int64) {
	switch d.GPU {
	case "":
		return "", 0
	case halda.Metal:
		return string(d.GPU), d.MetalBudget
	}
	return string(d.GPU), d.VRAMAvailable
}
