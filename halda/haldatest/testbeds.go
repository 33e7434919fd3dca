package haldatest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"homering/halda"
)

// testdata is halda/testdata, found from this file so that tests in any
// package can load it.
func testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}

// Devices loads a device list from halda/testdata (e.g. "devices.json").
func Devices(name string) ([]halda.Device, error) {
	var ds []halda.Device
	if err := load(name, &ds); err != nil {
		return nil, err
	}
	return ds, nil
}

// Model loads a model shape from halda/testdata (e.g. "llama3-70b-q4k.json").
func Model(name string) (halda.Model, error) {
	var m halda.Model
	err := load(name, &m)
	return m, err
}

func load(name string, v any) error {
	b, err := os.ReadFile(testdata(name))
	if err != nil {
		return fmt.Errorf("haldatest: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("haldatest: decode %s: %w", name, err)
	}
	return nil
}

// Head returns ds with the named device moved to the front (the head).
func Head(ds []halda.Device, name string) []halda.Device {
	out := make([]halda.Device, 0, len(ds))
	for _, d := range ds {
		if d.Name == name {
			out = append(out, d)
		}
	}
	for _, d := range ds {
		if d.Name != name {
			out = append(out, d)
		}
	}
	return out
}

// Problem loads a whole problem from halda/testdata (e.g. "thrash-flip.json").
func Problem(name string) (halda.Problem, error) {
	var p halda.Problem
	err := load(name, &p)
	return p, err
}
