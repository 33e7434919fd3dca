package wire

import (
	"fmt"

	"homering/discovery/deviceid"
)

// Job messages set up a ring job between runner processes; the ring session
// never sees them (the runner and the driver handle them).
const (
	TypeJobStart    Type = 73
	TypeJobAck      Type = 74
	TypeJobLink     Type = 75
	TypeDeviceStats Type = 76
)

// MaxPeers bounds the peer list of a JobStart.
const MaxPeers = MaxDevices

// Peer is a worker of a job and the address its runner listens on. On the
// wire its ID is the readable text form (deviceid.ID.String, 63 bytes), the
// bytes the string field carried before it was typed.
type Peer struct {
	ID   deviceid.ID
	Addr string
}

// JobStart is the head's first frame on its link to a worker: the job, the
// model whose slices the worker fetches (on the head's PurposeSlice
// connection), the context size, and every worker's ring address so that a
// worker can dial its successor. The head sends it again when the peers
// change (a device joins).
type JobStart struct {
	Job   uint64
	Model [32]byte
	NCtx  int
	// NoPrefetch: never prefetch a window ahead of its turn (to measure
	// what prefetching gains).
	NoPrefetch bool
	// TickMS is the head's tick: the worker ticks alike, so both sides
	// call the other lost after the same silence.
	TickMS int
	Peers  []Peer
	// Idle: the head holds the job between requests (its windows' KV for
	// the conversation's next turn) and computes nothing until it sends
	// the JobStart again without Idle. A worker may end an idle job at any
	// time (another head's job, memory pressure); the head then starts
	// afresh.
	Idle bool
}

// JobAck answers a JobStart: CodeOK, or why the worker refuses the job.
type JobAck struct {
	Job  uint64
	Code Code
	Text string
}

// JobLink is the first frame of the activation link a worker dials to its
// successor in the ring.
type JobLink struct{ Job uint64 }

// DeviceStats is what a worker measured during a plan: its compute time
// over Tokens decode passes (all its windows), its memory pressure, and the
// slice bytes it fetched for the plan.
type DeviceStats struct {
	Plan      uint64
	Tokens    uint32
	ComputeUS uint64
	// Pressure is memory pressure in 1/10000: the drop of available memory
	// since the job began over total memory (or the cgroup's limit).
	Pressure   uint16
	Fetched    uint64 // slice bytes fetched for this plan
	SliceBytes uint64 // tensor bytes in this device's slice
	// PromptUS is the compute time of its windows on prefill passes
	// (more than one row) over Prompts computes, PromptRows the rows of
	// their first round: each device's part of a prompt (issue 19).
	PromptUS   uint64
	Prompts    uint32
	PromptRows uint32
	// VRAMUsed is what its windows hold on its GPU (weights, KV, compute
	// buffers, as allocated) and VRAMFree what the GPU reports free; 0
	// without GPU layers (issue 17: measured VRAM beside the plan's).
	VRAMUsed uint64
	VRAMFree uint64
}

func (*JobStart) Type() Type    { return TypeJobStart }
func (*JobAck) Type() Type      { return TypeJobAck }
func (*JobLink) Type() Type     { return TypeJobLink }
func (*DeviceStats) Type() Type { return TypeDeviceStats }

func (j *JobStart) appendTo(b []byte) []byte {
	b = be.AppendUint64(b, j.Job)
	b = append(b, j.Model[:]...)
	b = be.AppendUint32(b, uint32(j.NCtx))
	var flags byte
	if j.NoPrefetch {
		flags |= 1
	}
	if j.Idle {
		flags |= 2
	}
	b = append(b, flags)
	b = be.AppendUint32(b, uint32(j.TickMS))
	b = append(b, byte(len(j.Peers)))
	for _, p := range j.Peers {
		b = appendStr(appendStr(b, p.ID.String()), p.Addr)
	}
	return b
}

func (j *JobStart) decode(d *decoder) {
	j.Job = d.u64("job")
	copy(j.Model[:], d.take(32, "model"))
	j.NCtx = int(d.u32("n_ctx"))
	flags := d.u8("flags")
	if flags&^3 != 0 {
		d.fail(ErrMalformed, "job flags %#x", flags)
	}
	j.NoPrefetch, j.Idle = flags&1 != 0, flags&2 != 0
	j.TickMS = int(d.u32("tick"))
	n := d.count(int(d.u8("peers")), MaxPeers, 2, "peers")
	if n == 0 {
		return
	}
	j.Peers = make([]Peer, n)
	for i := range j.Peers {
		j.Peers[i].ID = d.deviceID("peer id")
		j.Peers[i].Addr = d.str("peer addr")
	}
}

func (j *JobStart) validate() error {
	if len(j.Peers) > MaxPeers {
		return fmt.Errorf("job with %d peers: %w", len(j.Peers), ErrTooLarge)
	}
	if j.NCtx < 1 || uint64(j.NCtx) > 1<<31 {
		return fmt.Errorf("job n_ctx %d: %w", j.NCtx, ErrMalformed)
	}
	if j.TickMS < 1 || j.TickMS > 60000 {
		return fmt.Errorf("job tick %d ms: %w", j.TickMS, ErrMalformed)
	}
	for _, p := range j.Peers {
		if p.ID.IsZero() {
			return fmt.Errorf("job peer at %q without a device ID: %w", p.Addr, ErrMalformed)
		}
		if err := checkName(p.Addr); err != nil {
			return err
		}
	}
	return nil
}

func (a *JobAck) appendTo(b []byte) []byte {
	return appendText(be.AppendUint16(be.AppendUint64(b, a.Job), uint16(a.Code)), a.Text)
}

func (a *JobAck) decode(d *decoder) {
	a.Job, a.Code, a.Text = d.u64("job"), Code(d.u16("code")), d.text()
}

func (l *JobLink) appendTo(b []byte) []byte { return be.AppendUint64(b, l.Job) }
func (l *JobLink) decode(d *decoder)        { l.Job = d.u64("job") }

func (s *DeviceStats) appendTo(b []byte) []byte {
	b = be.AppendUint64(b, s.Plan)
	b = be.AppendUint32(b, s.Tokens)
	b = be.AppendUint64(b, s.ComputeUS)
	b = be.AppendUint16(b, s.Pressure)
	b = be.AppendUint64(b, s.Fetched)
	b = be.AppendUint64(b, s.SliceBytes)
	b = be.AppendUint64(b, s.PromptUS)
	b = be.AppendUint32(b, s.Prompts)
	b = be.AppendUint32(b, s.PromptRows)
	b = be.AppendUint64(b, s.VRAMUsed)
	return be.AppendUint64(b, s.VRAMFree)
}

func (s *DeviceStats) decode(d *decoder) {
	s.Plan, s.Tokens, s.ComputeUS = d.u64("plan"), d.u32("tokens"), d.u64("compute")
	s.Pressure, s.Fetched, s.SliceBytes = d.u16("pressure"), d.u64("fetched"), d.u64("slice bytes")
	s.PromptUS, s.Prompts, s.PromptRows = d.u64("prompt compute"), d.u32("prompts"), d.u32("prompt rows")
	s.VRAMUsed, s.VRAMFree = d.u64("vram used"), d.u64("vram free")
}

func (s *DeviceStats) validate() error {
	if s.Pressure > 10000 {
		return fmt.Errorf("memory pressure %d/10000: %w", s.Pressure, ErrMalformed)
	}
	return nil
}
