package job

import (
	"runtime/metrics"

	"homering/engine/profile/sysinfo"
)

// memUse is what this process holds in anonymous memory, by component: what
// memory pressure on a ring device is made of besides page cache (weights
// stay file pages the kernel may evict).
type memUse struct {
	Anon int64 // resident anonymous memory (sysinfo.ProcessAnon); 0 where unknown
	// GoHeap is the Go heap's memory not returned to the OS: objects, free
	// and unused space the runtime keeps (it returns it slowly on its own;
	// debug.FreeOSMemory at once).
	GoHeap  int64
	GoFree  int64 // of GoHeap, free memory the runtime has not returned yet
	GoOther int64 // stacks, runtime metadata, GC data
}

// goMemSamples are the runtime/metrics a memUse is computed from.
var goMemNames = [...]string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
}

// readMemUse reads this process's memory now. runtime/metrics does not stop
// the world, so this is cheap enough to call once per ring action.
func readMemUse() memUse {
	var s [len(goMemNames)]metrics.Sample
	for i, n := range goMemNames {
		s[i].Name = n
	}
	metrics.Read(s[:])
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	u := memUse{Anon: sysinfo.ProcessAnon()}
	u.GoHeap, u.GoFree = v(0)+v(1)+v(2), v(2)
	u.GoOther = max(v(3)-v(4)-u.GoHeap, 0)
	return u
}

// memPeak keeps the largest anonymous memory seen and what it was made of.
type memPeak struct {
	at memUse // the sample with the most Anon
}

func (p *memPeak) sample() {
	if u := readMemUse(); u.Anon > p.at.Anon || p.at.Anon == 0 && u.GoHeap > p.at.GoHeap {
		p.at = u
	}
}
