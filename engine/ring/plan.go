package ring

import (
	"fmt"

	"homering/discovery/deviceid"
	"homering/engine/ring/wire"
	"homering/halda"
)

// FromHalda turns Halda's plan into the plan the ring installs. A device
// releases each window after use when its case says memory is short (M1,
// M2, M3, M5: the paper's devices whose weights are re-read per token);
// under M4 everything stays. Halda's n_m (Assignment.N: the first n of each
// window on the GPU) becomes the device's GPULayers. The result is checked
// as the wire checks it: the windows must tile [0, L) round by round, and
// no device may have more GPU layers than a window of its holds. Halda
// names devices by their device ID's text (app/planner does): a name that
// is not a device ID is an error.
func FromHalda(id uint64, p halda.Plan, nEmbd int) (*wire.Plan, error) {
	w := &wire.Plan{ID: id, K: p.K, NEmbd: nEmbd, DType: wire.F32}
	for _, a := range p.Ring {
		id, err := deviceid.Parse(a.Device)
		if err != nil {
			return nil, fmt.Errorf("ring: halda plan device %q: %w", a.Device, err)
		}
		d := wire.Device{ID: id, Release: a.Case != halda.M4, GPULayers: a.N}
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
