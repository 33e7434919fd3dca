package api

import (
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/engine/profile/sysinfo"
)

// memSampler keeps a short history of this device's memory. Sampling is
// driven by readers (the live stream, the plan), at most once a second, so
// nothing runs while no UI is open. Pressure is ΔMemAvailable/MemTotal from
// the first reading of the run, which stays the baseline after it scrolls
// out of the history.
type memSampler struct {
	read func() (avail, total int64, err error)
	keep int

	mu   sync.Mutex // guards hist and base
	hist []apitype.MemSample
	base int64 // MemAvailable of the first reading: pressure is measured from it
}

func newMemSampler(read func() (int64, int64, error), keep int) *memSampler {
	return &memSampler{read: read, keep: keep}
}

// sample takes a reading if the last is older than a second, and returns
// the history, oldest first.
func (m *memSampler) sample(now time.Time) []apitype.MemSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.hist); n == 0 || now.Sub(m.hist[n-1].At) >= time.Second {
		if avail, total, err := m.read(); err == nil && total > 0 {
			if m.base == 0 {
				m.base = avail
			}
			m.hist = addMemSampleFrom(m.hist, m.base, now, avail, total, m.keep)
		}
	}
	return append([]apitype.MemSample(nil), m.hist...)
}

// addMemSampleFrom appends a reading whose pressure is measured from base
// (MemAvailable before the run), clamped to [0,1].
func addMemSampleFrom(hist []apitype.MemSample, base int64, now time.Time, avail, total int64, keep int) []apitype.MemSample {
	s := apitype.MemSample{At: now, Available: avail, Total: total,
		Pressure: min(max(float64(base-avail)/float64(total), 0), 1)}
	hist = append(hist, s)
	if len(hist) > keep {
		hist = hist[len(hist)-keep:]
	}
	return hist
}

// readMeminfo reads this device's available and total memory through the
// one cross-OS reader (engine/profile/sysinfo: /proc/meminfo on Linux,
// GlobalMemoryStatusEx on Windows, the VM counters on macOS).
func readMeminfo() (avail, total int64, err error) {
	m, err := sysinfo.ReadMemory()
	if err != nil {
		return 0, 0, err
	}
	return m.Available, m.Total, nil
}
