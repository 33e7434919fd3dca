package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"homering/app/api/apitype"
	"homering/app/problem"
)

// liveHeartbeat is how often the live stream sends a snapshot when nothing
// changed: fresh memory readings, and proof the agent is alive.
const liveHeartbeat = 2 * time.Second

// liveSettle batches a burst of node events into one snapshot.
const liveSettle = 150 * time.Millisecond

// live streams apitype.Live snapshots as server-sent events ("event: live"):
// one at once, one after each burst of node events or Work changes, one per
// heartbeat.
func (u *ui) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, apitype.Error{Error: "Streaming is not supported here."})
		return
	}
	events, cancel := u.s.Agent.Watch()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	beat := time.NewTicker(liveHeartbeat)
	defer beat.Stop()
	var settle <-chan time.Time
	send := func() bool {
		plan, err := u.buildPlan()
		if err != nil {
			pr := problem.Make(problem.Settings, sentence(err))
			plan.Problem = &pr
		}
		b, _ := json.Marshal(apitype.Live{Status: u.s.status(), Peers: u.s.Agent.Peers(), Plan: plan, Work: u.s.Agent.Work().List(time.Now()), Ring: u.s.ringReport()})
		if _, err := fmt.Fprintf(w, "event: live\ndata: %s\n\n", b); err != nil {
			return false
		}
		fl.Flush()
		beat.Reset(liveHeartbeat)
		return true
	}
	work := u.s.Agent.Work().Changed() // before the first snapshot, which includes what it has seen
	if !send() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-work:
			work = u.s.Agent.Work().Changed() // later changes; this one is in the settled send
			if settle == nil {
				settle = time.After(liveSettle)
			}
		case _, ok := <-events:
			if !ok {
				return
			}
			if settle == nil {
				settle = time.After(liveSettle)
			}
		case <-settle:
			settle = nil
			if !send() {
				return
			}
		case <-beat.C:
			if !send() {
				return
			}
		}
	}
}
