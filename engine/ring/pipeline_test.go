package ring_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"homering/engine/ring/ringtest"
)

// A pipelined prompt leaves every window's rows in order, each micro-batch
// right after the one before (the KV of passes of Batch rows one after the
// other), runs the output head once, and gives the reference token, for
// rings of 1-3 devices, k of 1-3, and devices that compute at once or
// take ticks (so that micro-batches overlap).
func TestPipelinedPromptOrder(t *testing.T) {
	act := regexp.MustCompile(`^(\w+)->\w+ Activation plan=\d+ seq=\d+ r=\d+ layers=(\S+) pos=(\d+) rows=(\d+)`)
	for _, tt := range []struct {
		name  string
		plan  string
		slow  string
		n     int // prompt tokens
		batch int
	}{
		{"three devices k=1", "a=0-3 b=3-6 c=6-8 k=1", "", 7, 2},
		{"three devices k=2, one tick per compute", "a=0-2,6-8 b=2-4,8-10 c=4-6,10-12 k=2", "a=1 b=1 c=1", 9, 4},
		{"two devices k=3, a slow middle", "a=0-1,2-3,4-5 b=1-2,3-4,5-6 k=3", "a=1 b=3", 10, 3},
		{"one device", "a=0-4 k=1", "a=2", 5, 2},
		{"a batch as long as the prompt", "a=0-3 b=3-6 c=6-8 k=1", "", 6, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := ringtest.NewEnv()
			do := func(line string) string {
				f := strings.Fields(line)
				return env.Handle(ringtest.Cmd{Pos: tt.name, Name: f[0], Args: f[1:]})
			}
			var ids []string
			for _, w := range strings.Fields(tt.plan) {
				if id, _, ok := strings.Cut(w, "="); ok && id != "k" {
					ids = append(ids, id)
				}
			}
			do("devices " + strings.Join(ids, " "))
			do("plan id=1 " + tt.plan)
			if tt.slow != "" {
				do("slow " + tt.slow)
			}
			var toks []string
			for i := range tt.n {
				toks = append(toks, strconv.Itoa(i+1))
			}
			out := do(fmt.Sprintf("token %s batch=%d", strings.Join(toks, " "), tt.batch))
			for i := 0; i < 50 && !strings.Contains(out, "EmitToken"); i++ {
				out += "\n" + do("tick")
			}
			next := map[string]int{} // per window sending activations, the next row it must compute
			outputs := 0
			for _, l := range strings.Split(out, "\n") {
				if m := act.FindStringSubmatch(l); m != nil {
					w := m[1] + " " + m[2]
					pos, rows := atoi(m[3]), atoi(m[4])
					if pos != next[w] || rows > tt.batch {
						t.Errorf("window %s computed rows [%d, %d), want from %d in micro-batches of at most %d:\n%s", w, pos, pos+rows, next[w], tt.batch, out)
					}
					next[w] = pos + rows
				}
				if strings.HasSuffix(l, " output") {
					outputs++
				}
				if strings.Contains(l, "EmitToken") {
					var got, want int
					if _, err := fmt.Sscanf(l[strings.Index(l, "token="):], "token=%d (reference %d)", &got, &want); err != nil || got != want {
						t.Errorf("%s: want the reference token", l)
					}
				}
			}
			if outputs != 1 || !strings.Contains(out, "EmitToken") {
				t.Errorf("%d output computes, want one and a token:\n%s", outputs, out)
			}
			for w, n := range next {
				if n != tt.n {
					t.Errorf("window %s computed %d rows, want %d", w, n, tt.n)
				}
			}
		})
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
