package halda_test

import (
	"encoding/json"
	"os"
	"testing"

	"homering/halda"
	"homering/halda/haldatest"
)

// FuzzSolve: any Problem that decodes from JSON gives a plan that keeps the
// invariants, or an error; never a panic. The greedy solver keeps it pure Go
// and fast.
func FuzzSolve(f *testing.F) {
	for _, pair := range [][2]string{{"devices.json", "llama3-70b-q4k.json"}, {"devices.json", "llama3-8b-q4k.json"}} {
		d, err1 := os.ReadFile("testdata/" + pair[0])
		m, err2 := os.ReadFile("testdata/" + pair[1])
		if err1 != nil || err2 != nil {
			f.Fatal(err1, err2)
		}
		f.Add([]byte(`{"devices":` + string(d) + `,"model":` + string(m) + `}`))
	}
	f.Add([]byte(`{"devices":[{"name":"a","os":"linux","cpu_flops":{"f16":1e11},"cpu_read_bytes_per_s":1e11,"ram_available_bytes":3e9,"disk_seq_read_bytes_per_s":1e9}],"model":{"layers":4,"layer_bytes":{"f16":1e9},"layer_flops":{"f16":1e9},"vocab":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p halda.Problem
		if json.Unmarshal(b, &p) != nil {
			return
		}
		pl, err := halda.Solve(p, haldatest.Greedy{})
		if err != nil {
			return
		}
		sum, seen := 0, make([]int, p.Model.Layers)
		for _, a := range pl.Ring {
			sum += a.W
			if a.N < 0 || a.N > a.W {
				t.Fatalf("%s: n=%d w=%d", a.Device, a.N, a.W)
			}
			for _, r := range a.Layers {
				for l := r.Start; l < r.End; l++ {
					seen[l]++
				}
			}
		}
		if sum != pl.Window || pl.K*pl.Window != p.Model.Layers {
			t.Fatalf("Σw=%d window=%d k=%d L=%d", sum, pl.Window, pl.K, p.Model.Layers)
		}
		for l, c := range seen {
			if c != 1 {
				t.Fatalf("layer %d held %d times", l, c)
			}
		}
	})
}
