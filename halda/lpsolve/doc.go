// Package lpsolve solves Halda's per-k integer programs (halda.LayerILP)
// with lp_solve 5.5 through github.com/draffensperger/golp. It is the only
// package that imports golp (cgo); halda itself stays pure Go.
//
// Encoding: integer columns c_m = w_m − n_m (CPU layers) and n_m (GPU layers)
// with the LayerILP's CPU and GPU bounds as column bounds, the row
// Σ (c_m + n_m) = W, and WMin ≤ c_m + n_m ≤ WMax rows only where the column
// bounds do not imply them; a column exists only where its variable can be
// non-zero (a CPU-only device has no n column). That matrix is totally
// unimodular (the incidence matrix of a bipartite graph), so lp_solve's
// first LP relaxation is already integral: no branching. lp_solve's
// statuses map to typed errors: INFEASIBLE → ErrInfeasible (which wraps
// halda.ErrILPInfeasible, so Halda skips that k), UNBOUNDED → ErrUnbounded,
// NOMEMORY → ErrNoMemory, TIMEOUT and other incomplete stops → ErrTimeout,
// anything else → ErrFailed; each comes as a *StatusError naming the status.
// The objective of a solution is recomputed from the rounded integers.
//
// Build: lp_solve's headers and shared library come from Debian's
// liblpsolve55-dev and lp-solve; build/env.sh sets the cgo flags.
package lpsolve
