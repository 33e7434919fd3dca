package job

import (
	"testing"

	"homering/engine/profile/sysinfo"
)

func TestIdleMemoryBounds(t *testing.T) {
	const gib = 1 << 30
	for _, tt := range []struct {
		name        string
		held, limit int64
		mem         sysinfo.Memory
		tooBig      bool
		short       bool
	}{
		{"small KV, plenty free", 14 << 20, gib, sysinfo.Memory{Total: 16 * gib, Available: 8 * gib}, false, false},
		{"over 5% of the device", 60 << 20, gib, sysinfo.Memory{Total: 16 * gib, Available: 8 * gib}, true, false},
		{"RAM nearly used up", 1 << 20, 16 * gib, sysinfo.Memory{Total: 16 * gib, Available: gib / 2}, false, true},
		{"cgroup: anonymous use near its limit", 1 << 20, gib, sysinfo.Memory{Total: 16 * gib, Available: 8 * gib,
			Cgroup: &sysinfo.Cgroup{Limit: gib, Usage: gib, File: 20 << 20}}, false, true},
		{"cgroup: full of page cache is not short", 1 << 20, gib, sysinfo.Memory{Total: 16 * gib, Available: 8 * gib,
			Cgroup: &sysinfo.Cgroup{Limit: gib, Usage: gib, File: gib / 2}}, false, false},
		{"unknown limit", 1 << 40, 0, sysinfo.Memory{}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := idleTooBig(tt.held, tt.limit); got != tt.tooBig {
				t.Errorf("idleTooBig(%d, %d) = %v, want %v", tt.held, tt.limit, got, tt.tooBig)
			}
			if got := memoryShort(tt.mem); got != tt.short {
				t.Errorf("memoryShort(%+v) = %v, want %v", tt.mem, got, tt.short)
			}
		})
	}
}
