package gguf

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the header parser and to everything
// that interprets a parsed header: no input may panic, every error must be a
// *FormatError with a one-line message, and every accepted file's tensors
// must lie inside it.
func FuzzParse(f *testing.F) {
	f.Add(tinyModel())
	f.Add((&builder{}).header(3, 0, 0).Bytes())
	f.Add((&builder{}).header(2, 1, 1).kvU32("general.alignment", 64).tensor("blk.0.x", TypeQ8_0, 0, 32).pad().zeros(64).Bytes())
	if b, err := os.ReadFile(stories); err == nil {
		f.Add(b[:16384])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FormatError", err, err)
			}
			if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") {
				t.Fatalf("bad message %q", msg)
			}
			return
		}
		for _, ti := range g.Tensors {
			if ti.Offset < g.DataOffset || ti.Offset+ti.Size > int64(len(data)) || (ti.Offset-g.DataOffset)%g.Alignment != 0 {
				t.Fatalf("tensor %q at [%d,%d) outside data [%d,%d) or misaligned", ti.Name, ti.Offset, ti.Offset+ti.Size, g.DataOffset, len(data))
			}
		}
		if s, err := g.Shape(); err == nil {
			_ = g.CheckTensors(s)
			_ = s.KVBytesPerToken(2)
		}
		_, _ = g.Layout()
	})
}
