package runner

import (
	"context"
	"errors"

	"homering/engine/ring/wire"
)

// ErrNotYet is returned by ring calls this build does not carry out yet.
var ErrNotYet = errors.New("runner: the ring across processes is not available in this build yet")

// RingPeer is one worker of a ring job: its device ID and the address its
// runner child listens on (ServeRing's answer on that device).
type RingPeer struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// RingParams say how to run a ring job from the head.
type RingParams struct {
	Plan       *wire.Plan `json:"plan"`                  // from ring.FromHalda; Devices[0] is the head
	Peers      []RingPeer `json:"peers"`                 // every worker of the plan
	Identity   string     `json:"identity"`              // config dir holding this device's certificate and key
	NoPrefetch bool       `json:"no_prefetch,omitempty"` // never prefetch the next window (bench/ring case e)
}

// DeviceStats is one device's part of a ring generation, as measured.
type DeviceStats struct {
	ID      string       `json:"id"`
	Windows []wire.Range `json:"windows"`
	// ComputeMS is the device's measured compute time per token, all its
	// windows together (decode tokens only).
	ComputeMS float64 `json:"compute_ms"`
	// MemPressure is the largest memory pressure the device reported during
	// the job: the drop of MemAvailable over MemTotal since the job began,
	// or cgroup usage over its limit inside a cgroup with one. 0..1.
	MemPressure float64 `json:"mem_pressure"`
}

// ServeParams say how a worker's child serves ring jobs.
type ServeParams struct {
	Identity string   `json:"identity"` // config dir holding this device's certificate and key
	Allowed  []string `json:"allowed"`  // device IDs that may connect: the head and the other workers
	CacheDir string   `json:"cache_dir"`
	Listen   string   `json:"listen"` // "": "[::]:0"
	Threads  int      `json:"threads,omitempty"`
}

// RingGenerate runs g on the ring of rp with this device as the head: the
// child maps lp's model, dials every worker of rp.Peers (mutual TLS with the
// identity in rp.Identity), serves them the slices of their windows and
// streams tokens to onToken. When a worker is lost the child asks replan for
// a plan without the lost devices, re-prefills the conversation on it and
// goes on; replan's error ends the generation. Stats carry per-device
// entries and, after a loss, the time from the loss to the next token.
func (s *Supervisor) RingGenerate(ctx context.Context, lp LoadParams, rp RingParams, g GenerateParams,
	onToken func(Token) error,
	replan func(ctx context.Context, without []string) (RingParams, error)) (Stats, error) {
	return Stats{}, ErrNotYet
}

// ServeRing makes the child a ring worker: it listens on sp.Listen with the
// device's identity, admits only sp.Allowed, and runs the jobs heads start
// (slices fetched into sp.CacheDir, windows opened, prefetched, released)
// until ctx ends or StopServing. It returns the address the child listens
// on. Called again with the same parameters while serving, it returns the
// same address.
func (s *Supervisor) ServeRing(ctx context.Context, sp ServeParams) (addr string, err error) {
	return "", ErrNotYet
}

// StopServing ends serving: a job in flight ends, its windows close, the
// listener closes. The child keeps running.
func (s *Supervisor) StopServing(ctx context.Context) error {
	return ErrNotYet
}
