package agent

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"homering/app/api/apitype"
	"homering/app/planner"
	"homering/app/problem"
	"homering/discovery/deviceid"
)

// DeviceMap is the device map: the planner's plan for the selected model
// (the one the next chat with default options will run: app/planner), with
// every device, paired or not. What the last chat ran is GET /api/v1/ring,
// shown beside it. This device's last measured ms/token (MeasuredChat) is
// shown when the plan runs here alone.
func (b *Agent) DeviceMap() (apitype.Plan, error) {
	measured := b.meter.measured()
	set, err := b.Settings()
	if err != nil {
		return apitype.Plan{}, err
	}
	out := apitype.Plan{ModelPath: set.Model, Devices: []apitype.MapDevice{}, At: time.Now()}
	st := b.Status()
	self := apitype.MapDevice{ID: st.Device.ID, Short: st.Device.Short, Name: st.Device.Name, Self: true, Paired: true,
		Visible: true, Contribute: st.Contribute, RingIndex: -1, Role: "idle", Profile: "default", Windows: []apitype.Window{},
		Memory: b.Memory(time.Now())}
	all := []apitype.MapDevice{self}
	for _, p := range b.Peers().Peers {
		all = append(all, apitype.MapDevice{ID: p.ID, Short: p.Short, Name: p.Name, Paired: p.Paired, Visible: p.Visible,
			Contribute: p.Contribute, RingIndex: -1, Role: "idle", Profile: "default", Windows: []apitype.Window{}, Memory: []apitype.MemSample{}})
	}
	byID := map[deviceid.ID]int{}
	for i, d := range all {
		byID[d.ID] = i
		if !d.Self && d.Paired && d.Visible && d.Contribute {
			// A look at the peer in the background feeds the planner's
			// peer table (app/agent/looks.go).
			e := b.LookAtPeer(d.ID, time.Now())
			all[i].RTTMs, all[i].Memory = e.RTTMs, e.Memory
			if all[i].Memory == nil {
				all[i].Memory = []apitype.MemSample{}
			}
			if e.At.IsZero() {
				all[i].Why = "Looking at it now: it takes part once it answers."
			} else if e.RTTMs == nil {
				all[i].Why = "It did not answer the last look, so plans leave it out."
			}
		}
		switch {
		case d.Self:
		case !d.Visible:
			all[i].Why = "Not seen on the network now."
		case !d.Paired:
			all[i].Why = "Not paired: pair it in Settings to let it take layers."
		case !d.Contribute:
			all[i].Why = "Contribute is off on that device."
		}
	}
	if set.Model == "" {
		pr := problem.Make(problem.NoModel, "The device map shows where a model's layers would run.")
		out.Problem = &pr
		out.Devices = all
		return out, nil
	}
	pl, err := b.Planner().Next(planner.Request{})
	if pl.Self.Measured {
		all[0].Profile = "measured"
	}
	for id, m := range pl.Peers {
		if i, ok := byID[id]; ok && m.Measured {
			all[i].Profile = "measured"
		}
	}
	out.Model = strings.TrimSuffix(filepath.Base(set.Model), filepath.Ext(set.Model))
	out.Layers = pl.Model.Layers
	if err != nil {
		pr := problem.Make(problem.NoPlan, said(err))
		if me := (*planner.ModelError)(nil); errors.As(err, &me) {
			// The file itself could not be read: more devices would not help.
			pr = problem.Make(problem.ModelUnreadable, said(err))
		}
		out.Problem = &pr
		out.Devices = all
		return out, nil
	}
	out.K, out.PredictedMs, out.Streams = pl.Plan.K, pl.Plan.PredictedMs, max(pl.Plan.Streams, 1)
	if pl.Raw.PredictedMs != pl.Plan.PredictedMs {
		out.UncalibratedMs = pl.Raw.PredictedMs
	}
	var ordered []apitype.MapDevice
	taken := map[deviceid.ID]bool{}
	for ri, a := range pl.Plan.Ring {
		i, ok := byID[a.ID]
		if !ok {
			continue
		}
		d := all[i]
		d.InRing, d.RingIndex, d.Case, d.Why = true, ri, string(a.Case), ""
		if d.Self && len(pl.Plan.Ring) == 1 {
			// Until the ring runs, chat runs here alone: its speed is this
			// plan's measurement.
			d.MeasuredMs = measured
		}
		d.Role = "worker"
		if ri == 0 {
			d.Role = "head"
		}
		d.PredictedMs, d.RAMBytes, d.VRAMBytes = a.PredictedMs, a.RAMBytes, a.VRAMBytes
		d.GPU, d.VRAMFreeBytes = planner.GPUOf(pl.RawDevices[a.Device])
		d.GPUName = pl.RawDevices[a.Device].GPUName
		d.CPUVariant = pl.RawDevices[a.Device].CPUVariant
		if out.UncalibratedMs != 0 {
			for _, r := range pl.Raw.Ring {
				if r.Device == a.Device {
					d.UncalibratedMs = r.PredictedMs
				}
			}
		}
		for _, l := range a.Layers {
			d.Windows = append(d.Windows, apitype.Window{Start: l.Start, End: l.End, GPU: min(a.N, l.End-l.Start)})
		}
		taken[d.ID] = true
		ordered = append(ordered, d)
	}
	for _, dr := range pl.Plan.Dropped {
		if i, ok := byID[dr.ID]; ok && !taken[dr.ID] {
			all[i].Role, all[i].Why = "left out", said(errors.New(dr.Reason))
		}
	}
	for _, d := range all {
		if !taken[d.ID] {
			ordered = append(ordered, d)
		}
	}
	out.Devices = ordered
	return out, nil
}
