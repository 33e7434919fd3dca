package job

import (
	"fmt"
	"time"

	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
)

// Kept ring jobs: a head holds its job (links, plan, every device's windows
// and KV caches) idle after a request that asked for it (Params.KeepMS),
// so that the conversation's next turn needs no new job (links, slices,
// windows) and skips the prefill passes a fresh job would compute alike
// (ring.KeptPrefix): the reply is a fresh job's, bit for bit.

// idleShare is the most of a device's memory (memLimit: its cgroup's limit,
// else its RAM) that an idle job may hold in KV caches and compute buffers
// (anonymous memory). A device whose windows hold more ends the job when it
// goes idle: on the bench model a 27-layer window holds 54 KB of KV per
// position, so 5% of a 1.5 GiB device is ~1400 positions.
const idleShare = 0.05

// idleFreeMin is the share of a device's memory that must stay available
// while a job is idle: below it (memory pressure from anything else) the
// device ends the job and frees its KV at once.
const idleFreeMin = 0.05

// idleCheck is how often an idle job looks at its device's memory.
const idleCheck = time.Second

// workerIdleMax is the longest a worker holds an idle job whose head never
// comes back nor says goodbye (its pings keep the link alive).
const workerIdleMax = 10 * time.Minute

// claimWait is how long a request waits for a kept job whose last pass
// (that of a cancelled request) is still going round the ring.
const claimWait = 10 * time.Second

// idleTooBig reports whether an idle job holding held bytes of anonymous
// memory is too big to keep on a device with limit bytes.
func idleTooBig(held, limit int64) bool {
	return limit > 0 && float64(held) > idleShare*float64(limit)
}

// memoryShort reports whether a device's available memory is below
// idleFreeMin: inside a memory cgroup with a limit, what its non-reclaimable
// use leaves of the limit; else MemAvailable of the RAM.
func memoryShort(m sysinfo.Memory) bool {
	if cg := m.Cgroup; cg != nil && cg.Limit > 0 && cg.Limit < m.Total {
		return float64(cg.Limit-max(cg.Usage-cg.File, 0)) < idleFreeMin*float64(cg.Limit)
	}
	return m.Total > 0 && float64(m.Available) < idleFreeMin*float64(m.Total)
}

// idleMemory says why a device holding held bytes for an idle job must let
// it go now, or "".
func idleMemory(held int64) string {
	m, err := sysinfo.ReadMemory()
	if err != nil {
		return ""
	}
	limit := m.Total
	if cg := m.Cgroup; cg != nil && cg.Limit > 0 && cg.Limit < m.Total {
		limit = cg.Limit
	}
	switch {
	case idleTooBig(held, limit):
		return fmt.Sprintf("its windows hold %.1f MB, more than %.0f%% of this device's %.0f MB", mb(held), idleShare*100, mb(limit))
	case memoryShort(m):
		return fmt.Sprintf("memory is short (less than %.0f%% available)", idleFreeMin*100)
	}
	return ""
}

// reusable says why the kept job h cannot serve a request with parameters
// rp (normalized) and a context of nCtx for prompt tokens and maxTokens, or
// "" when it can: the same plan on the same peers, identity, tick,
// prefetch, threads and context, and a KV cache as big as a fresh job's
// for this request (else the reply could end sooner).
func (h *headJob) reusable(rp Params, nCtx, prompt, maxTokens int) string {
	tick := defaultTick
	if rp.TickMS > 0 {
		tick = time.Duration(rp.TickMS) * time.Millisecond
	}
	switch {
	case !h.up || h.plan == nil:
		return "its plan is not up"
	case !ring.SamePlacement(h.plan, rp.Plan):
		return "the plan changed"
	case rp.Identity != h.identity || tick != h.tick || rp.NoPrefetch != h.noPrefetch || rp.Threads != h.threads:
		return "the ring's settings changed"
	case nCtx != h.loadNCtx:
		return "the context size changed"
	case ring.JobContext(nCtx, prompt, maxTokens) > h.nCtx:
		return fmt.Sprintf("its KV cache of %d positions is too small for %d prompt tokens and %d more", h.nCtx, prompt, maxTokens)
	}
	for _, p := range rp.Peers {
		if old, ok := h.peers[p.ID]; ok && old.Addr != p.Addr && h.plan.Index(p.ID) > 0 {
			return "a worker's address changed"
		}
	}
	// A worker that ended the job (for another head, short of memory)
	// closed its link; the idle hold may not have seen it yet.
	for _, d := range h.plan.Devices[1:] {
		if !h.drv.HasLink(d.ID) {
			return "worker " + d.ID.String() + " left it"
		}
	}
	return ""
}

// idleHold is a kept job's idle time: a goroutine that reads the driver's
// actions until a request claims the job or the job ends.
type idleHold struct {
	claims chan chan struct{}
	stop   chan string
	done   chan struct{}
}

// holdIdle keeps h for the next request (h.keep at most): it tells the
// workers the job is idle and watches it. inflight says a pass of the
// request that just ended (cancelled) is still going round; its token is
// dropped, and the job cannot be claimed until it is back.
func (h *headJob) holdIdle(inflight bool) {
	hd := &idleHold{claims: make(chan chan struct{}), stop: make(chan string, 1), done: make(chan struct{})}
	h.hold = hd
	h.setIdle(true)
	h.rm.setKept(h)
	go func() {
		defer close(hd.done)
		timer := time.NewTimer(h.keep)
		defer timer.Stop()
		check := time.NewTicker(idleCheck)
		defer check.Stop()
		kv, compute := h.eng.Memory()
		reason := idleMemory(kv + compute)
		for reason == "" {
			claims := hd.claims
			if inflight {
				claims = nil
			}
			select {
			case a := <-h.drv.Out():
				switch a := a.(type) {
				case ring.EmitToken:
					inflight = false
				case ring.Replan:
					reason = "it lost devices while idle: " + a.Reason
				}
			case err := <-h.runDone:
				h.runDone <- err
				reason = fmt.Sprintf("the ring stopped: %v", err)
			case <-timer.C:
				reason = fmt.Sprintf("idle for %v", h.keep)
			case <-check.C:
				kv, compute := h.eng.Memory()
				reason = idleMemory(kv + compute)
			case reason = <-hd.stop:
			case c := <-claims:
				close(c) // the claimer reads the driver from now on
				return
			}
		}
		h.rm.forget(h)
		h.log.Info("kept ring job ended", "reason", reason)
		h.end()
	}()
}

// claim takes h out of its idle hold for a request; false when the job
// ended meanwhile (or its last pass did not come back in time: then it ends
// now).
func (h *headJob) claim() bool {
	hd := h.hold
	c := make(chan struct{})
	t := time.NewTimer(claimWait)
	defer t.Stop()
	select {
	case hd.claims <- c:
		<-c
		h.hold = nil
		return true
	case <-hd.done:
		return false
	case <-t.C:
		h.stopHold("its last pass did not come back")
		return false
	}
}

// stopHold ends an idle job and waits until it has.
func (h *headJob) stopHold(reason string) {
	select {
	case h.hold.stop <- reason:
	default:
	}
	<-h.hold.done
}

// setIdle tells the plan's workers that the job is idle (they may end it)
// or working again.
func (h *headJob) setIdle(idle bool) {
	if h.plan == nil {
		return
	}
	js := h.jobStart()
	js.Idle = idle
	for _, d := range h.plan.Devices[1:] {
		_ = h.drv.SendTo(d.ID, js)
	}
}

// setKept makes h the kept job (ending any other).
func (m *Head) setKept(h *headJob) {
	m.mu.Lock()
	old := m.kept
	m.kept = h
	m.mu.Unlock()
	if old != nil && old != h && old.claim() {
		old.end()
	}
}

// forget drops h if it is the kept job.
func (m *Head) forget(h *headJob) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept == h {
		m.kept = nil
	}
}

// takeKept returns the kept job, claimed (its hold over), or nil.
func (m *Head) takeKept() *headJob {
	m.mu.Lock()
	h := m.kept
	m.kept = nil
	m.mu.Unlock()
	if h == nil || !h.claim() {
		return nil
	}
	return h
}

// EndKept ends the kept job, if any (the protocol's ring_end); m may be
// nil.
func (m *Head) EndKept() {
	if m != nil {
		m.dropKept("the agent ended it")
	}
}

// dropKept ends the kept job, if any.
func (m *Head) dropKept(reason string) {
	m.mu.Lock()
	h := m.kept
	m.kept = nil
	m.mu.Unlock()
	if h != nil {
		h.stopHold(reason)
	}
}
