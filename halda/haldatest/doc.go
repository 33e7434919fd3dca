// Package haldatest holds what Halda's tests and benchmarks share: a solver
// that proves optimality by enumeration (Exhaustive), a seeded generator of
// random problems and clusters, and loaders for the papers' testbeds in
// halda/testdata. Test support only: it reads files, halda does not.
package haldatest
