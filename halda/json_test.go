package halda_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"homering/discovery/deviceid"
	"homering/halda"
	"homering/halda/lpsolve"
)

// oldProfile is a device as `homering profile --json` wrote it before
// devices carried IDs (and still does: the command names the device by
// its host name), and as `homering plan --devices` reads it.
const oldProfile = `{"name":"kitchen-pc","os":"linux","cpu_variant":"haswell","cpu_flops":{"f32":20000000000,"q8_0":50000000000},` +
	`"cpu_read_bytes_per_s":10000000000,"ram_available_bytes":8589934592,"ram_total_bytes":17179869184,` +
	`"disk_seq_read_bytes_per_s":1000000000,"disk_rand_read_bytes_per_s":300000000,"link_s":{"garage":0.002}}`

// A profile file without an ID loads as a device known by name only and
// writes back the same text; a device with an ID writes it as its readable
// text, which reads back as the same ID.
func TestDeviceJSON(t *testing.T) {
	var d halda.Device
	if err := json.Unmarshal([]byte(oldProfile), &d); err != nil {
		t.Fatalf("an old profile file does not load: %v", err)
	}
	if d.Name != "kitchen-pc" || !d.ID.IsZero() || d.LinkSec["garage"] != 0.002 {
		t.Errorf("loaded %+v, want the name kitchen-pc, no ID and its link to garage", d)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != oldProfile {
		t.Errorf("written back as\n%s\nwant the same text\n%s", b, oldProfile)
	}

	id := deviceid.ForName("kitchen")
	d.ID, d.Name = id, id.String()
	b, err = json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"` + id.String() + `","name":"` + id.String() + `",`; !strings.HasPrefix(string(b), want) {
		t.Errorf("a device with an ID is written as\n%s\nwant it to start %s", b, want)
	}
	var back halda.Device
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
		t.Errorf("read back ID %v (%v), want %v", back.ID, err, id)
	}
}

// Solve copies each device's ID into its part of the plan, left out or
// not, and a plan of devices known by name only is written as before: no
// "id" anywhere.
func TestPlanCarriesDeviceIDs(t *testing.T) {
	m := halda.Model{Layers: 8, LayerBytes: map[string]int64{"f32": 1 << 20}, LayerFlops: map[string]float64{"f32": 1e9}, Vocab: 100, KVBytesPerToken: 1}
	dev := func(name string, id deviceid.ID, flops float64) halda.Device {
		return halda.Device{ID: id, Name: name, OS: halda.Linux, CPUFlops: map[string]float64{"f32": flops}, CPUReadBytesPerSec: 10e9,
			RAMAvailable: 8 << 30, DiskSeqBytesPerSec: 1e9, DiskRandBytesPerSec: 1e9}
	}
	head, fast, slow := deviceid.ForName("head"), deviceid.ForName("fast"), deviceid.ForName("slow")
	// Nine devices for eight layers: one is left out, the slowest.
	p := halda.Problem{Model: m, DefaultLinkSec: 1e-4, KeepAllDevices: true, HeadHoldsLayers: true,
		Devices: []halda.Device{dev("h", head, 100e9), dev("f", fast, 100e9)}}
	for i := range 7 {
		p.Devices = append(p.Devices, dev(string(rune('k'+i)), deviceid.ForName(string(rune('k'+i))), 100e9))
	}
	p.Devices = append(p.Devices, dev("s", slow, 1e9))
	plan, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]deviceid.ID{}
	for _, d := range p.Devices {
		byName[d.Name] = d.ID
	}
	for _, a := range plan.Ring {
		if a.ID != byName[a.Device] {
			t.Errorf("assignment %s has ID %v, want %v", a.Device, a.ID, byName[a.Device])
		}
	}
	if len(plan.Dropped) == 0 {
		t.Fatalf("no device was left out: %+v", plan.Ring)
	}
	for _, dr := range plan.Dropped {
		if dr.ID != byName[dr.Device] {
			t.Errorf("dropped %s has ID %v, want %v", dr.Device, dr.ID, byName[dr.Device])
		}
	}

	for i := range p.Devices {
		p.Devices[i].ID = deviceid.ID{}
	}
	plan, err = halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"id"`) {
		t.Errorf("a plan of named devices is written with IDs: %s", b)
	}
}

// Two devices with one ID are one device twice: the problem is invalid.
func TestDuplicateDeviceID(t *testing.T) {
	id := deviceid.ForName("twin")
	d := halda.Device{ID: id, OS: halda.Linux, CPUFlops: map[string]float64{"f32": 1e9}, CPUReadBytesPerSec: 1e9, RAMAvailable: 1 << 30,
		DiskSeqBytesPerSec: 1e9, DiskRandBytesPerSec: 1e9}
	a, b := d, d
	a.Name, b.Name = "a", "b"
	p := halda.Problem{Devices: []halda.Device{a, b}, DefaultLinkSec: 1e-3,
		Model: halda.Model{Layers: 2, LayerBytes: map[string]int64{"f32": 1}, LayerFlops: map[string]float64{"f32": 1}, Vocab: 1}}
	_, err := halda.Solve(p, lpsolve.Solver{})
	if !errors.Is(err, halda.ErrInvalidProblem) || !strings.Contains(err.Error(), "device IDs must be unique") {
		t.Errorf("err = %v, want an invalid problem: the ID appears twice", err)
	}
}
