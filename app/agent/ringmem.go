package agent

import (
	"homering/engine/profile/sysinfo"
	"homering/halda"
)

// withEngineMemory credits d's available memory with what this device's
// engine child holds (runner.Supervisor.EngineAnon): a ring job kept for
// the next turn, a worker's idle job. The OS counts it as used, yet the
// next job on this device replaces it (the kept job is reused or ended
// first), so a plan may count on it. Without the credit, the first ring
// job made every device look ~25 MB poorer from the second turn on: under
// bench/ring.sh's 256 MiB caps that charged the kept plan's head with
// paging (Halda's case M3) and moved the ring to other windows, a fresh
// job and a re-prefill at the second turn and again when the workers'
// next looks came (issue 19).
func (b *Agent) withEngineMemory(d halda.Device) halda.Device {
	held := b.sup.EngineAnon()
	if held <= 0 {
		return d
	}
	d.RAMAvailable += held
	if d.RAMTotal > 0 {
		d.RAMAvailable = min(d.RAMAvailable, d.RAMTotal)
	}
	return d
}

// plannerMemory is the planner's reading of this device's memory (for a
// device without a measured profile): the OS's, with the engine's credit.
func (b *Agent) plannerMemory() (avail, total int64) {
	avail, total = 8<<30, 16<<30
	if m, err := sysinfo.ReadMemory(); err == nil && m.Total > 0 {
		avail, total = m.Available, m.Total
	}
	d := b.withEngineMemory(halda.Device{RAMAvailable: avail, RAMTotal: total})
	return d.RAMAvailable, total
}
