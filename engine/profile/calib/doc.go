// Package calib turns measured times into calibrated device coefficients,
// the thesis's running estimates (../shared/notes/papers-digest.md §1.5:
// compute speed from a ring list of 15 measurements, median; latency from a
// ring list of 7 idle pings, median), applied to Halda's device profile.
//
// It is pure: no I/O, no goroutines, no clock. The caller feeds samples:
//   - Compute(sec): the measured compute time of this device for one token
//     (the sum of its windows' evaluation times in that token, page faults
//     included), as the runner observes it;
//   - Link(peer, sec): a measured time to send one hidden state to peer.
//
// Apply(base, predicted) returns base with its coefficients scaled so that
// Halda's model reproduces the rolling median of the compute samples, given
// the plan's split of this device's predicted time (Assignment.ComputeMs and
// DiskMs). The error is charged to the term that dominates the prediction:
//   - compute and memory (α, β) when ComputeMs ≥ DiskMs: every FLOPS rate
//     and memory throughput of the backends the device runs layers on is
//     multiplied by f = ComputeMs / (median − DiskMs);
//   - disk (the paging cases) otherwise: every disk throughput (sequential,
//     random, page-fault) is multiplied by DiskMs / (median − ComputeMs).
//
// The factor is bounded to [1/MaxFactor, MaxFactor] (default 5) so one bad
// sample window (a stalled machine) cannot wreck a profile, and with fewer
// than MinSamples (default 5: the median survives two stalled tokens of
// a shared machine) samples nothing changes. LinkSec[peer] becomes
// the median of that peer's samples. Recomputing the plan's prediction is
// halda.Solve on the calibrated Problem (Recalibrate); whether to switch to
// the new plan is Switch: only when it beats the current one's recomputed
// prediction by the thesis's margin (τ = 0.95).
//
// Across plans a device's windows change, so its samples are kept as
// ratios: Ratio(measured, predicted) is one run's measured compute time
// over the uncalibrated prediction for its part (ComputeMs + DiskMs).
// FromRatios(plan, ratios) turns each device's median ratio into one
// sample under plan (the ratio times its predicted time there), so
// Recalibrate scales its rates by it; Uncalibrated(a, raw, cal) recovers
// the uncalibrated time of an assignment made with calibrated profiles
// (each term scales back by its factor), the denominator of the next ratio.
package calib
