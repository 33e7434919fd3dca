package agent

import (
	"slices"

	"homering/app/api/apitype"
	"homering/engine/runner"
)

// servingJob is what the runner's worker does for another head (j, nil
// when nothing), for the API: the head named as paired (peers).
func servingJob(j *runner.Serving, peers apitype.Peers) *apitype.ServingJob {
	if j == nil {
		return nil
	}
	s := &apitype.ServingJob{HeadID: j.Head, Layers: []apitype.Window{}, MemoryBytes: j.AnonBytes, Pressure: j.Pressure, Idle: j.Idle, Since: j.Since}
	for _, p := range peers.Peers {
		if p.ID == j.Head {
			s.HeadName = p.Name
		}
	}
	for _, w := range j.Windows {
		s.Layers = append(s.Layers, apitype.Window{Start: w.Start, End: w.End, GPU: min(j.GPULayers, w.Len())})
	}
	return s
}

// withServingHead marks the head this device serves as online: a head
// that does not contribute does not advertise, yet it is plainly there
// while its ring job runs here. The entry is a copy; ps is not changed.
func withServingHead(ps apitype.Peers, j *runner.Serving) apitype.Peers {
	if j == nil {
		return ps
	}
	out := ps
	out.Peers = slices.Clone(ps.Peers)
	for i, p := range out.Peers {
		if p.ID == j.Head && !p.Visible {
			p.Visible = true
			p.Sources = append(slices.Clone(p.Sources), "ring")
			out.Peers[i] = p
		}
	}
	return out
}
