package gguf

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sliceHeader is a file with only metadata: layers' slice keys as given
// (nil layers: no homering.slice.* keys at all).
func sliceHeader(version uint32, layers []int32, input, output bool) []byte {
	b := &builder{}
	n := uint64(1)
	if layers != nil {
		n += 4
	}
	b.header(3, 0, n)
	b.kvStr("general.architecture", "llama")
	if layers != nil {
		b.kvU32("homering.slice.version", version)
		b.str("homering.slice.layers").u32(uint32(Array)).u32(uint32(Int32)).u64(uint64(len(layers)))
		for _, v := range layers {
			b.u32(uint32(v))
		}
		b.str("homering.slice.input").u32(uint32(Bool))
		b.WriteByte(boolByte(input))
		b.str("homering.slice.output").u32(uint32(Bool))
		b.WriteByte(boolByte(output))
	}
	return b.pad().Bytes()
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func TestHolding(t *testing.T) {
	tests := []struct {
		name    string
		file    []byte
		want    Holding
		wantErr error
	}{
		{name: "whole model", file: sliceHeader(1, nil, false, false),
			want: Holding{Layers: []LayerRange{{0, 4}}, Input: true, Output: true}},
		{name: "head slice", file: sliceHeader(1, []int32{0, 2}, true, false),
			want: Holding{Slice: true, Layers: []LayerRange{{0, 2}}, Input: true}},
		{name: "two ranges and output", file: sliceHeader(1, []int32{0, 1, 2, 4}, false, true),
			want: Holding{Slice: true, Layers: []LayerRange{{0, 1}, {2, 4}}, Output: true}},
		{name: "output only", file: sliceHeader(1, []int32{}, false, true),
			want: Holding{Slice: true, Output: true}},
		{name: "unknown version", file: sliceHeader(2, []int32{0, 2}, false, false), wantErr: ErrBadMetadata},
		{name: "odd bounds", file: sliceHeader(1, []int32{0, 2, 3}, false, false), wantErr: ErrBadMetadata},
		{name: "overlapping", file: sliceHeader(1, []int32{0, 2, 1, 3}, false, false), wantErr: ErrBadMetadata},
		{name: "empty range", file: sliceHeader(1, []int32{2, 2}, false, false), wantErr: ErrBadMetadata},
		{name: "past the model", file: sliceHeader(1, []int32{2, 5}, false, false), wantErr: ErrBadMetadata},
		{name: "negative", file: sliceHeader(1, []int32{-1, 2}, false, false), wantErr: ErrBadMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := readBytes(t, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Holding(4)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Holding: error %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Holding (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHoldingHasLayers(t *testing.T) {
	h := Holding{Slice: true, Layers: []LayerRange{{0, 2}, {2, 3}, {5, 7}}, Output: true}
	tests := []struct {
		name        string
		first, last int
		want        bool
	}{
		{"no layers", 4, 4, true},
		{"inside one range", 5, 7, true},
		{"across adjacent ranges", 0, 3, true},
		{"into a gap", 2, 4, false},
		{"across a gap", 0, 7, false},
		{"past the end", 6, 8, false},
		{"in the gap", 3, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.HasLayers(tt.first, tt.last); got != tt.want {
				t.Errorf("HasLayers(%d, %d) = %v, want %v", tt.first, tt.last, got, tt.want)
			}
		})
	}
	if diff := cmp.Diff("layers [0, 2) + [2, 3) + [5, 7), the output head", h.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	if got := (Holding{Slice: true}).String(); got != "nothing" {
		t.Errorf("empty holding says %q", got)
	}
}
