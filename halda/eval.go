package halda

// cost is one device's predicted share of a token's time and memory under
// the full model of A.3 (eqs. 11-19, with the max operators, not the case
// form): it is how every plan is scored, Halda's and the baselines' alike.
type cost struct {
	comp, disk, net float64 // seconds per token
	cs              Case
	thrash          bool  // paging with its window not resident: M1t, M3t, M5t (reported as M1, M3, M5)
	ram, vram       int64 // bytes asked of RAM (incl. paged part) and pinned in VRAM
	hard            int64 // non-evictable bytes in RAM / shared memory: KV cache and buffers
	resident        int64
	fits            bool // hard ≤ memory and VRAM ≤ free VRAM
}

func (c cost) total() float64 { return c.comp + c.disk + c.net }

// evalDev scores device i at ring position pos (0 = head) holding w layers
// per round, n of them on the GPU, for k rounds, sending to device next.
func (q *prob) evalDev(i int, head bool, k, w, n, next int) cost {
	x := &q.devs[i]
	m := q.Model
	l, g := k*w, k*n
	var c cost
	// Compute (eq. 12) and memory access (eqs. 13-14).
	c.comp = float64(l-g)*(x.cpuSec+x.KVCopyCPUSec+float64(q.rp)/x.CPUReadBytesPerSec) + float64(k)*x.copies
	if g > 0 {
		c.comp += float64(g) * (x.gpuSec + x.KVCopyGPUSec + float64(q.rp)/x.GPUReadBytesPerSec)
	}
	if head {
		c.comp += x.outSec
	}
	// Disk (eqs. 15-18 and the Windows model of the package doc).
	need, capB := q.need(x, head, l, g), x.ramCap()
	over := need > capB
	switch {
	case x.kind == kindMetal:
		if over {
			c.disk = float64(int64(l)*q.b+boolBytes(head, q.bio)) / x.disk
		}
	case over:
		// Gradual reclaim re-reads only the overflow (eq. 15), provided one
		// window's CPU layers fit: then each round's window is prefetched
		// into memory the previous one frees (A.2). If not, the window
		// evicts its own first layers before they run and every CPU layer
		// is read again per token (the prefetch-release effect, A.1).
		// A MoE layer's overflow is its coldest experts, re-read at their
		// routing rate ρ, and the window row asks for its hot set only; a
		// window that does not hold it misses on every byte a token reads.
		c.disk = q.rho * float64(need-capB) / x.disk
		if !q.hotFits(x, head, k, w, n) {
			c.thrash = true
			c.disk = max(c.disk, (float64(l-g)*x.readB+float64(boolBytes(head, q.bio)))/x.disk)
		}
	}
	if head {
		c.disk += q.rowSec
	}
	c.cs = M4
	if over {
		c.cs = overloadCase(x.kind)
	}
	// Communication (eq. 19): one hidden state per window to the successor.
	if next != i {
		c.net = float64(k) * q.link[i][next]
	}
	// Memory.
	c.ram = need
	if x.kind != kindMetal && x.gpu == CUDA && g > 0 {
		c.vram = int64(g)*q.bp + m.GPUBufferBytes
	}
	if x.kind == kindMetal {
		c.hard = int64(l)*q.kvL + m.CPUBufferBytes + m.GPUBufferBytes
	} else {
		c.hard = int64(l-g)*q.kvL + m.CPUBufferBytes
	}
	c.resident = min(need, capB)
	c.resident = max(c.resident, c.hard)
	c.fits = c.hard <= capB && (x.kind == kindMetal || c.vram <= x.dCUDA || g == 0)
	if x.kind == kindMetal && g > 0 {
		// Metal's GPU row (eq. 35).
		c.fits = c.fits && int64(g)*q.bp <= x.dMetal-m.GPUBufferBytes-boolBytes(head, m.OutputBytes)
	}
	if x.gpu == NoGPU && g > 0 {
		c.fits = false
	}
	return c
}

func boolBytes(b bool, v int64) int64 {
	if b {
		return v
	}
	return 0
}

func overloadCase(k memKind) Case {
	switch k {
	case kindMacNoMetal:
		return M1
	case kindMetal:
		return M2
	case kindWindows:
		return M5
	}
	return M3
}

// evalRing scores a whole assignment: ring lists device indices head first.
func (q *prob) evalRing(ring []int, k int, w, n []int) ([]cost, float64) {
	cs := make([]cost, len(ring))
	var t float64
	for p, i := range ring {
		cs[p] = q.evalDev(i, p == 0, k, w[p], n[p], ring[(p+1)%len(ring)])
		t += cs[p].total()
	}
	return cs, t
}
