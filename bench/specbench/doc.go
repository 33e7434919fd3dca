// Command specbench is bench/spec.sh's helper: speculative decoding
// (engine/head's Request.Draft) on a target/draft pair whose agreement is
// controlled, on one device and through a ring of three devices in this
// process, each against the same engine unspeculated.
//
// The pair (engine/modelgen's quiet layers): the target is a generated
// llama of -layers layers whose layers from -draft-layers on have their
// output projections (attn_output, ffn_down) scaled by -scale, so they
// barely change the residual stream; the draft is the same seed's model of
// -draft-layers layers, whose tensors are the target's first layers,
// embedding and output head byte for byte. -scale sets how often the two
// pick the same greedy token (0: always).
//
// It prints, per engine (one device; the ring), the time per output token
// unspeculated and speculated (decode time over tokens evaluated, drafting
// included), their ratio, the acceptance rate (accepted drafts over drafted
// tokens) and whether the tokens were identical; and the cost of verifying
// n tokens in one pass of the target relative to evaluating one (median of
// -reps). Greedy throughout; every device runs -threads threads.
package main
