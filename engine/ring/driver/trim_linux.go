//go:build linux && cgo

package driver

/*
#include <malloc.h>
*/
import "C"

// TrimMalloc hands the C heap's free memory back to the OS (glibc
// malloc_trim). Windows allocate and free megabytes of KV cache, compute
// buffers and graph arenas, and glibc keeps freed blocks resident in its
// arenas; trimmed when a job ends, a head runner idled ~2 MB lower after
// each job of BenchmarkRingMemory (300 MB model), and a worker 1-1.5 MB.
func TrimMalloc() { C.malloc_trim(0) }
