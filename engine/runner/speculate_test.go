//go:build !windows

package runner

import (
	"context"
	"strings"
	"testing"
)

// A load with a draft speculates greedy requests in the child: the same
// reply, the drafts counted in the stats; a draft of another vocabulary
// fails the request with one sentence.
func TestSupervisorSpeculates(t *testing.T) {
	s := newSupervisor(t)
	g := *greedy(32)
	g.Prompt = "Once upon a time"
	want, plain, err := collect(context.Background(), s, LoadParams{Model: stories260K, NCtx: 256, Threads: 1}, g)
	if err != nil {
		t.Fatal(err)
	}
	// The model as its own draft: every proposal is accepted.
	got, st, err := collect(context.Background(), s, LoadParams{Model: stories260K, NCtx: 256, Threads: 1, Draft: stories260K}, g)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || st.CompletionTokens != plain.CompletionTokens {
		t.Errorf("speculated reply %q, unspeculated %q", got, want)
	}
	if st.Drafted == 0 || st.Accepted != st.Drafted || plain.Drafted != 0 {
		t.Errorf("stats: %d of %d drafts accepted (unspeculated: %d drafted); want all of some", st.Accepted, st.Drafted, plain.Drafted)
	}
	_, _, err = collect(context.Background(), s, LoadParams{Model: stories260K, NCtx: 256, Threads: 1, Draft: randomModel}, g)
	if err == nil || !strings.Contains(err.Error(), "another vocabulary") {
		t.Errorf("a draft of another vocabulary: %v", err)
	}
}
