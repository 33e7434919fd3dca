package gguf

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	fsggml "github.com/ollama/ollama/fs/ggml"
)

// TestTypeNumbersMatchGGMLHeader checks every type's number and name against
// enum ggml_type in the pinned ggml.h (copied by build/setup.sh), including
// the numbers ggml commented out as removed.
func TestTypeNumbersMatchGGMLHeader(t *testing.T) {
	h, err := os.ReadFile("../ggml/include/ggml.h")
	if err != nil {
		t.Fatalf("%v: run build/setup.sh, which copies ggml's headers from the pinned module", err)
	}
	enum := regexp.MustCompile(`(?s)enum ggml_type \{(.*?)\};`).FindSubmatch(h)
	if enum == nil {
		t.Fatal("enum ggml_type not found in ggml.h")
	}
	entry := regexp.MustCompile(`(?m)^\s*(//\s*)?GGML_TYPE_(\w+)\s*=\s*(\d+)`)
	seen := map[Type]bool{}
	for _, m := range entry.FindAllSubmatch(enum[1], -1) {
		removed := len(m[1]) > 0
		name := string(m[2])
		n, _ := strconv.Atoi(string(m[3]))
		typ := Type(n)
		seen[typ] = true
		switch {
		case name == "COUNT":
			if typ != TypeCount {
				t.Errorf("GGML_TYPE_COUNT = %d, TypeCount = %d", n, TypeCount)
			}
		case removed:
			if typ.Valid() {
				t.Errorf("type %d (%s) is removed in ggml.h but Valid here", n, name)
			}
		default:
			if !typ.Valid() || typ.String() != name {
				t.Errorf("type %d: ggml.h says %s, here %q (valid %v)", n, name, typ.String(), typ.Valid())
			}
		}
	}
	for typ := Type(0); typ < TypeCount+10; typ++ {
		if typ.Valid() && !seen[typ] {
			t.Errorf("type %d (%s) is valid here but not in ggml.h", typ, typ)
		}
	}
}

// TestTypeSizesMatchOllama cross-checks block and type sizes with ollama's
// own Go table for every type it knows (the IQ and TQ sizes were read from
// ggml-common.h's block structs with sizeof).
func TestTypeSizesMatchOllama(t *testing.T) {
	checked := 0
	for typ := Type(0); typ < TypeCount; typ++ {
		if !typ.Valid() {
			continue
		}
		o := fsggml.TensorType(typ)
		if o.TypeSize() == 0 {
			continue // ollama has no size for the IQ/TQ types
		}
		checked++
		if int64(o.BlockSize()) != typ.BlockSize() || int64(o.TypeSize()) != typ.TypeSize() {
			t.Errorf("%s: block %d size %d here, ollama says block %d size %d", typ, typ.BlockSize(), typ.TypeSize(), o.BlockSize(), o.TypeSize())
		}
	}
	if checked < 15 {
		t.Errorf("only %d types cross-checked", checked)
	}
	if got := TypeQ4_K.RowBytes(4096); got != 16*144 {
		t.Errorf("Q4_K row of 4096 = %d bytes, want %d", got, 16*144)
	}
	if Type(4).RowBytes(32) != 0 || Type(4).String() != "type(4)" {
		t.Error("removed type 4 has a size or a name")
	}
}
