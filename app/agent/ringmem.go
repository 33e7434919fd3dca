package agent

import (
	"homering/engine/profile/sysinfo"
	"homering/halda"
)

// withEngineMemory gives d this device's available memory as the OS reads
// it now, with what this device's engine child holds (runner.Supervisor.
// EngineAnon: a ring job kept for the next turn, a worker's idle job)
// counted as available: the OS counts it as used, yet the next job on this
// device replaces it (the kept job is reused or ended first), so a plan
// may count on it. Without the credit, the first ring job made every
// device look ~25 MB poorer from the second turn on: under bench/ring.sh's
// 256 MiB caps that charged the kept plan's head with paging (Halda's case
// M3) and moved the ring to other windows, a fresh job and a re-prefill
// (issue 19). Read now rather than when the profile was cached (CachedSelf
// keeps a profile until its cache changes): the credit must go with the
// reading it corrects.
func (b *Agent) withEngineMemory(d halda.Device) halda.Device {
	avail, total := b.plannerMemory()
	d.RAMAvailable = avail
	if d.RAMTotal <= 0 {
		d.RAMTotal = total
	}
	return d
}

// plannerMemory is this device's available and total memory as plans count
// them: the OS's reading now, plus what the engine child holds, at most the
// total.
func (b *Agent) plannerMemory() (avail, total int64) {
	avail, total = 8<<30, 16<<30
	read := b.readMemory
	if read == nil { // an Agent not made by New (tests)
		read = sysinfo.ReadMemory
	}
	if m, err := read(); err == nil && m.Total > 0 {
		avail, total = m.Available, m.Total
	}
	return min(avail+b.sup.EngineAnon(), total), total
}
