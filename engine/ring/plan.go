package ring

import (
	"errors"
	"fmt"
	"slices"

	"homering/engine/ring/wire"
	"homering/halda"
)

// ErrNoDeviceID is FromHalda's error for a plan device without an ID.
var ErrNoDeviceID = errors.New("a ring runs on devices with device IDs")

// FromHalda turns Halda's plan into the plan the ring installs. A device
// releases each window after use when its case says memory is short (M1,
// M2, M3, M5: the paper's devices whose weights are re-read per token);
// under M4 everything stays. Halda's n_m (Assignment.N: the first n of each
// window on the GPU) becomes the device's GPULayers. The result is checked
// as the wire checks it: the windows must tile [0, L) round by round, and
// no device may have more GPU layers than a window of its holds. Every
// device needs its ID (halda.Device.ID, which app/planner sets): a device
// known only by a name cannot be dialled.
func FromHalda(id uint64, p halda.Plan, nEmbd int) (*wire.Plan, error) {
	w := &wire.Plan{ID: id, K: p.K, NEmbd: nEmbd, DType: wire.F32}
	for _, a := range p.Ring {
		if a.ID.IsZero() {
			return nil, fmt.Errorf("ring: halda plan device %q has no device ID: %w", a.Device, ErrNoDeviceID)
		}
		d := wire.Device{ID: a.ID, Release: a.Case != halda.M4, GPULayers: a.N}
		for _, r := range a.Layers {
			d.Windows = append(d.Windows, wire.Range{Start: r.Start, End: r.End})
			w.Layers = max(w.Layers, r.End)
		}
		w.Devices = append(w.Devices, d)
	}
	if _, _, err := wire.Encode(w); err != nil {
		return nil, fmt.Errorf("ring: halda plan cannot be installed: %w", err)
	}
	return w, nil
}

// SamePlacement reports whether two plans place the same layers on the
// same devices in the same order, with the same rounds, GPU layers,
// releases and hidden-state dtype: a ring job set up for one runs the
// other as it is (a kept job, engine/ring/job). Their IDs do not count:
// the agent numbers every plan it makes.
func SamePlacement(a, b *wire.Plan) bool {
	if a == nil || b == nil || a.K != b.K || a.Layers != b.Layers || a.NEmbd != b.NEmbd || a.DType != b.DType || len(a.Devices) != len(b.Devices) {
		return false
	}
	for i := range a.Devices {
		da, db := a.Devices[i], b.Devices[i]
		if da.ID != db.ID || da.Release != db.Release || da.GPULayers != db.GPULayers || !slices.Equal(da.Windows, db.Windows) {
			return false
		}
	}
	return true
}
