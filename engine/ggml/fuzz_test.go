package ggml

import (
	"bytes"
	"os"
	"testing"

	"homering/engine/gguf"
)

// FuzzParseGGUF: what the engine makes of any file engine/gguf accepts
// (fromGGUF, readHParams) never panics and never reports a tensor outside
// the bytes given.
func FuzzParseGGUF(f *testing.F) {
	good, err := os.ReadFile(stories)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:4096])
	f.Add(good[:100])
	f.Add([]byte("GGUF\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := gguf.Read(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		gf, err := fromGGUF(g, int64(len(b)))
		if err != nil {
			return
		}
		for _, tn := range gf.tensors {
			if tn.offset < 0 || tn.size < 0 || tn.offset+tn.size > int64(len(b)) {
				t.Fatalf("tensor %q [%d, +%d) outside %d bytes", tn.name, tn.offset, tn.size, len(b))
			}
		}
		_, _, _ = readHParams(gf)
	})
}
