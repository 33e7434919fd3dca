package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The committed TypeScript must be what the Go types give today; otherwise
// the web UI compiles against a wire format the server no longer speaks.
func TestCommittedFileIsFresh(t *testing.T) {
	want, err := Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "..", "frontend", "src", "apitype.gen.ts")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go generate ./app/api/apitype", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./app/api/apitype (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}

func TestMapping(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // lines that must appear, in order
		err  string // part of the error; "" when none
	}{
		{name: "scalars", src: "type A struct {\n S string `json:\"s\"`\n B bool `json:\"b\"`\n I int64 `json:\"i\"`\n F float64 `json:\"f\"`\n}",
			want: "export interface A {\n  s: string\n  b: boolean\n  i: number\n  f: number\n}"},
		{name: "nil-able types are null unless omitted", src: "type A struct {\n P *int `json:\"p\"`\n L []string `json:\"l\"`\n M map[string]any `json:\"m\"`\n}",
			want: "  p: number | null\n  l: string[] | null\n  m: Record<string, unknown> | null"},
		{name: "omitempty makes optional fields", src: "type A struct {\n P *B `json:\"p,omitempty\"`\n L []B `json:\"l,omitempty\"`\n S string `json:\"s,omitempty\"`\n}\ntype B struct{}",
			want: "  p?: B\n  l?: B[]\n  s?: string"},
		{name: "time", src: "import \"time\"\ntype A struct {\n T time.Time `json:\"t\"`\n D time.Duration `json:\"d\"`\n}",
			want: "  t: string\n  d: number"},
		{name: "device IDs are their text", src: "import \"homering/discovery/deviceid\"\ntype A struct {\n ID deviceid.ID `json:\"id\"`\n P deviceid.ID `json:\"p,omitzero\"`\n}",
			want: "  id: string\n  p?: string"},
		{name: "skipped and untagged fields", src: "type A struct {\n X int `json:\"-\"`\n y int\n Z int\n}",
			want: "export interface A {\n  Z: number\n}"},
		{name: "comments carried over", src: "// A is a thing.\ntype A struct {\n // N counts.\n N int `json:\"n\"` // at least 1\n}",
			want: "// A is a thing.\nexport interface A {\n  // N counts.\n  n: number // at least 1\n}"},
		{name: "constants and named types", src: "const Name = \"x.json\"\nconst max = 3\ntype Kind string",
			want: "export const Name = \"x.json\"\n\nexport type Kind = string"},
		{name: "embedded field is an error", src: "type B struct{}\ntype A struct {\n B\n}", err: "embedded field B"},
		{name: "foreign type is an error", src: "import \"net/netip\"\ntype A struct {\n X netip.Addr `json:\"x\"`\n}", err: "netip.Addr of another package"},
		{name: "unexported type is an error", src: "type a struct{}\ntype A struct {\n X a `json:\"x\"`\n}", err: "type a is not exported"},
		{name: "int map keys are an error", src: "type A struct {\n X map[int]string `json:\"x\"`\n}", err: "only string keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package p\n"+tt.src+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Generate(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tt.want) {
				t.Errorf("output lacks\n%s\ngot:\n%s", tt.want, got)
			}
		})
	}
}
