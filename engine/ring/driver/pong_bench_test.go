//go:build linux

package driver

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"homering/engine/ring"
	"homering/engine/ring/transport"
)

// BenchmarkPongUnderLoad measures how long a worker's driver takes to
// answer a ping while this process hashes a file it maps and pages out
// again (a slice fetch being hashed: a page fault per page, allocation
// churn and GC) on every CPU. Run it under outside load to see the rest:
// bench/pingload.sh adds 3 CPU burners and a process paging under a
// memory cap, and runs this at nice 10 as a serving runner is. It
// reports the round trips' percentiles (ms) and how far this process's
// ticks came late.
func BenchmarkPongUnderLoad(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An hour's tick: the worker never pings the measuring end itself.
	w := New(ring.New(tid("w"), 3600_000), idleEngine{}, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	near, far := link(b, "h", "w")
	w.AddConn(ctx, tid("h"), far)
	go func() { _ = w.Run(ctx) }()

	path := filepath.Join(b.TempDir(), "slice")
	const size = 256 << 20
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for range size / len(buf) {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	_ = f.Close()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = syscall.Munmap(mem) }()
	// One P more than the CPUs, as the runner child has (runner.Main).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.NumCPU() + 1))
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// As engine/slice's fetch does: each 1 MiB chunk copied into a
			// fresh buffer (the chunk a peer sent) and hashed.
			for ctx.Err() == nil {
				h := sha256.New()
				for off := 0; off < size && ctx.Err() == nil; off += 1 << 20 {
					chunk := mem[off : off+1<<20]
					h.Write(append([]byte(nil), chunk...))
					_ = syscall.Madvise(chunk, syscall.MADV_DONTNEED) // fault it in again next pass
				}
				_ = h.Sum(nil)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()

	pingThread(slog.Default()) // the measuring end, like a reader
	n := max(b.N, 500)
	rtts := make([]time.Duration, 0, n)
	lateMs := 0
	payload := make([]byte, 8)
	prev := time.Now()
	b.ResetTimer()
	for i := range n {
		binary.BigEndian.PutUint64(payload, uint64(i))
		ds, err := transport.Pings(near, 1, payload, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, ds[0])
		time.Sleep(10 * time.Millisecond)
		now := time.Now()
		lateMs = max(lateMs, int(now.Sub(prev).Milliseconds())-10-int(ds[0].Milliseconds()))
		prev = now
	}
	b.StopTimer()
	slices.Sort(rtts)
	q := func(p float64) float64 { return float64(rtts[int(p*float64(len(rtts)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.9), "p90-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(lateMs), "sleep-late-max-ms")
	b.ReportMetric(float64(len(rtts)), "pings")
}
