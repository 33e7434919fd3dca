package halda

import (
	"errors"
	"fmt"
)

// Sentinels. Errors returned by Solve wrap exactly one of them.
var (
	// ErrInvalidProblem: a field of the Problem is missing or out of range
	// (a *ValidationError says which).
	ErrInvalidProblem = errors.New("halda: invalid problem")
	// ErrNoFeasiblePlan: no plan fits the devices (a *NoFeasiblePlanError
	// says how many bytes are needed and available).
	ErrNoFeasiblePlan = errors.New("halda: no feasible plan")
	// ErrILPInfeasible: a Solver found that a LayerILP has no integer point.
	// Solve skips such a k; it never returns this.
	ErrILPInfeasible = errors.New("halda: integer program is infeasible")
	// ErrNoSolver: Solve was called with a nil Solver.
	ErrNoSolver = errors.New("halda: no ILP solver given")
)

// ValidationError names the field that is wrong and what to do.
type ValidationError struct {
	Field string // e.g. `devices["mac"].ram_available_bytes`
	Issue string // one sentence: what is wrong and what to do
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("halda: invalid problem: %s: %s", e.Field, e.Issue)
}

// Is makes errors.Is(err, ErrInvalidProblem) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidProblem }

// NoFeasiblePlanError says why no plan exists, in bytes a person can compare.
type NoFeasiblePlanError struct {
	// Reason is the limit that was hit, one of the Reason* constants.
	Reason string
	// NeedBytes is what the model needs for that limit; HaveBytes what the
	// devices offer.
	NeedBytes, HaveBytes int64
	Devices              int
	ContextTokens        int
}

// Reasons for NoFeasiblePlanError.
const (
	// ReasonKVCache: the KV cache and compute buffers, which cannot be paged
	// to disk, exceed the devices' memory.
	ReasonKVCache = "kv-cache"
	// ReasonNoFastDisk: the weights exceed RAM+VRAM and no device has a disk
	// fast enough to page the rest from.
	ReasonNoFastDisk = "no-fast-disk"
	// ReasonNoRoom: the totals fit but no split does (e.g. the head cannot
	// hold its own input and output layers).
	ReasonNoRoom = "no-room"
)

func (e *NoFeasiblePlanError) Error() string {
	need, have := gib(e.NeedBytes), gib(e.HaveBytes)
	switch e.Reason {
	case ReasonKVCache:
		return fmt.Sprintf("halda: no feasible plan: the KV cache for %d tokens and the compute buffers need %.1f GiB, "+
			"but the %d devices have %.1f GiB of memory for them; shorten the context or add a device",
			e.ContextTokens, need, e.Devices, have)
	case ReasonNoFastDisk:
		return fmt.Sprintf("halda: no feasible plan: the model needs %.1f GiB but the %d devices have %.1f GiB of RAM and VRAM, "+
			"and none has a disk fast enough to page the rest; add a device or use a smaller model or quantization",
			need, e.Devices, have)
	default:
		return fmt.Sprintf("halda: no feasible plan: the model needs %.1f GiB and the %d devices have %.1f GiB, "+
			"but no device has room for its first layers (the head also holds the input and output layers); "+
			"free memory on the head or add a device", need, e.Devices, have)
	}
}

// Is makes errors.Is(err, ErrNoFeasiblePlan) true.
func (e *NoFeasiblePlanError) Is(target error) bool { return target == ErrNoFeasiblePlan }

func gib(b int64) float64 { return float64(b) / (1 << 30) }
