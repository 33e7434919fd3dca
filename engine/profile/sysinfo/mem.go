package sysinfo

// Memory is what the OS reports about RAM and swap. Byte counts; zero when
// unknown.
type Memory struct {
	Total     int64 `json:"total_bytes"`     // the machine's RAM; a cgroup limit is in Cgroup
	Available int64 `json:"available_bytes"` // d_avail: usable now without swapping
	SwapTotal int64 `json:"swap_total_bytes"`
	SwapFree  int64 `json:"swap_free_bytes"`
	// Cgroup is the tightest memory cgroup limit this process is under
	// (Linux), or nil.
	Cgroup *Cgroup `json:"cgroup,omitempty"`
}

// Cgroup is a memory cgroup limit that caps Memory.Available.
type Cgroup struct {
	Version int    `json:"version"` // 1 or 2
	Path    string `json:"path"`    // the directory whose limit is tightest
	Limit   int64  `json:"limit_bytes"`
	Usage   int64  `json:"usage_bytes"`
	File    int64  `json:"file_bytes"` // reclaimable page cache charged to it
}

// ReadMemory reads the memory facts of this machine (and cgroup) now.
func ReadMemory() (Memory, error) { return readMemory() }
