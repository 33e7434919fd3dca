package tray

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// The Windows tray gets an ICO around the same PNG; other OSes the PNG.
func TestIconBytesICOOnWindows(t *testing.T) {
	png := iconPNG(iconContributing)
	if got := iconBytes(png, "linux"); !bytes.Equal(got, png) {
		t.Fatal("linux: not the PNG itself")
	}
	ico := iconBytes(png, "windows")
	le := binary.LittleEndian
	if le.Uint16(ico[0:]) != 0 || le.Uint16(ico[2:]) != 1 || le.Uint16(ico[4:]) != 1 {
		t.Fatalf("header % x, want reserved 0, type 1, one image", ico[:6])
	}
	if ico[6] != 32 || ico[7] != 32 || le.Uint16(ico[12:]) != 32 {
		t.Errorf("entry %dx%d at %d bpp, want 32x32 at 32", ico[6], ico[7], le.Uint16(ico[12:]))
	}
	if n, off := le.Uint32(ico[14:]), le.Uint32(ico[18:]); int(n) != len(png) || off != 22 || !bytes.Equal(ico[off:], png) {
		t.Errorf("entry says %d bytes at %d; want the %d-byte PNG at 22", n, off, len(png))
	}
}
