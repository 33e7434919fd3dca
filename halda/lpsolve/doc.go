// Package lpsolve solves Halda's per-k integer programs (halda.LayerILP)
// with lp_solve 5.5 through github.com/draffensperger/golp. It is the only
// package that imports golp (cgo); halda itself stays pure Go.
//
// Encoding: columns w_0..w_{M-1}, n_0..n_{M-1}, all integer; the bounds of
// the LayerILP become column bounds; rows are Σ w = W, n_m − w_m ≤ 0 and, when
// tighter than the bounds, CPUMin ≤ w_m − n_m ≤ CPUMax. lp_solve's statuses
// map to typed errors: INFEASIBLE → ErrInfeasible (which wraps
// halda.ErrILPInfeasible, so Halda skips that k), UNBOUNDED → ErrUnbounded,
// NOMEMORY → ErrNoMemory, TIMEOUT and other incomplete stops → ErrTimeout,
// anything else → ErrFailed; each comes as a *StatusError naming the status.
// The objective of a solution is recomputed from the rounded integers.
//
// Build: lp_solve's headers and shared library come from Debian's
// liblpsolve55-dev and lp-solve; build/env.sh sets the cgo flags.
package lpsolve
