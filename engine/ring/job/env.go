package job

import (
	"os"
	"strings"

	"homering/engine/ring/wire"
)

// The head's ring switches, read from the environment the agent gives its
// engine child (benchmarks and a person measuring set them):
//
//   - HOMERING_RING_HIDDEN=f16|f32: the dtype of hidden states on the wire
//     for the plans this head installs (every device converts its window's
//     output to it and back). Unset: defaultHidden.
//   - HOMERING_RING_PIPELINE=off: prefill passes go round as one batch, not
//     in ring.MicroRows micro-batches: the baseline of bench/turns.sh's
//     pipelining rows.
const (
	envRingHidden   = "HOMERING_RING_HIDDEN"
	envRingPipeline = "HOMERING_RING_PIPELINE"
)

// defaultHidden is the wire dtype of hidden states when HOMERING_RING_HIDDEN
// is unset.
const defaultHidden = wire.F32

// ringHidden is the dtype this head's plans send hidden states in.
func ringHidden() wire.DType {
	switch strings.ToLower(os.Getenv(envRingHidden)) {
	case "f16":
		return wire.F16
	case "f32":
		return wire.F32
	}
	return defaultHidden
}

// ringPipelined reports whether prefill passes are pipelined in
// micro-batches (HOMERING_RING_PIPELINE is not "off").
func ringPipelined() bool { return !strings.EqualFold(os.Getenv(envRingPipeline), "off") }
