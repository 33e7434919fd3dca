package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/gguf"
	"homering/engine/modelgen"
)

const storiesModel = "../../shared/models/stories260K.gguf"

func runInspect(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, append([]string{"inspect"}, args...)...)
}

// TestInspectGolden compares the whole text report of stories260K with
// testdata/inspect/stories260K.txt.
func TestInspectGolden(t *testing.T) {
	code, out, errs := runInspect(t, storiesModel)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	want, err := os.ReadFile("testdata/inspect/stories260K.txt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("report (-want +got):\n%s\n(if the change is intended: bin/homering inspect %s > app/testdata/inspect/stories260K.txt)", diff, storiesModel)
	}
}

func TestInspectJSON(t *testing.T) {
	// The flag may come after the file.
	code, out, errs := runInspect(t, storiesModel, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r inspectReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	got := []any{r.Architecture, r.Layers, r.Embd, r.FF, r.Heads, r.KVHeads, r.Vocab, r.Context, r.ChatTemplate, r.TensorCount, len(r.LayerParts), r.LayerParts[2].Bytes, r.Supported}
	want := []any{"llama", 5, 64, 172, 8, 4, 512, 2048, false, 48, 5, int64(181760), true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report fields (-want +got):\n%s", diff)
	}
	if len(r.Types) != 1 || r.Types[0] != (inspectType{Type: "F32", Tensors: 48, Bytes: 1171200}) {
		t.Errorf("types %+v", r.Types)
	}
}

func TestInspectGeneratedQwen3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q3.gguf")
	c := modelgen.Config{Arch: "qwen3", Layers: 2, Embd: 256, FF: 512, Heads: 8, KVHeads: 2, HeadDim: 64, Vocab: 400, Type: "Q4_K"}
	if err := modelgen.Generate(path, c); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runInspect(t, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"architecture    qwen3", "supported       yes", "heads           8 (KV heads 2, head dim 64)", "chat template   yes", "  Q4_K ", "layers 0-1 (each)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestInspectGeneratedGemma: inspect knows both Gemma families' tensors
// (post-norms, gemma3's q/k norms, gemma2's tied head) and shows which
// layers slide: gemma3 five of every six, gemma2 every other one.
func TestInspectGeneratedGemma(t *testing.T) {
	for _, tt := range []struct {
		c    modelgen.Config
		want []string
	}{
		{modelgen.Config{Arch: "gemma3", Layers: 7, Embd: 256, FF: 512, Heads: 4, KVHeads: 2, HeadDim: 128, Vocab: 400, Type: "Q8_0", SlidingWindow: 32, RopeScaleLinear: 8},
			[]string{"architecture    gemma3", "supported       yes", "heads           4 (KV heads 2, head dim 128)",
				"rope            128 dims, base 1e+06, linear scaling x8; sliding-window layers base 10000, no scaling",
				"sliding window  32 positions on 6 of 7 layers (the others attend to all)", "tied output     no", "layers 0-6 (each)"}},
		{modelgen.Config{Arch: "gemma2", Layers: 4, Embd: 256, FF: 512, Heads: 4, KVHeads: 2, HeadDim: 128, Vocab: 400, Type: "Q4_K"},
			[]string{"architecture    gemma2", "supported       yes", "sliding window  16 positions on 2 of 4 layers", "tied output     yes"}},
	} {
		t.Run(tt.c.Arch, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.c.Arch+".gguf")
			if err := modelgen.Generate(path, tt.c); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runInspect(t, path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestInspectGeneratedQwen3MoE: inspect shows a MoE model's experts, how
// many a token uses, and the weight bytes one token reads: every tensor but
// the expert stacks, 2/8 of those, and one row of token_embd.
func TestInspectGeneratedQwen3MoE(t *testing.T) {
	path := filepath.Join(t.TempDir(), "moe.gguf")
	c := modelgen.Config{Arch: "qwen3moe", Layers: 2, Embd: 256, FF: 512, Heads: 8, KVHeads: 2, HeadDim: 64, Vocab: 400, Type: "Q8_0",
		Experts: 8, ExpertsUsed: 2}
	if err := modelgen.Generate(path, c); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var all, active int64
	for _, ti := range f.Tensors {
		all += ti.Size
		switch {
		case strings.HasSuffix(ti.Name, "_exps.weight"):
			active += ti.Size / 8 * 2
		case ti.Name == "token_embd.weight":
			active += ti.Size / 400
		default:
			active += ti.Size
		}
	}
	code, out, errs := runInspect(t, path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r inspectReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	got := []any{r.Architecture, r.Supported, r.Experts, r.ExpertsUsed, r.ExpertFF, r.ModelBytes, r.ActiveBytes, r.LayerParts[1].ExpertBytes}
	want := []any{"qwen3moe", true, 8, 2, 256, all, active, int64(3 * 8 * 256 * 256 / 32 * 34)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report fields (-want +got):\n%s", diff)
	}
	code, out, errs = runInspect(t, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"8 per layer, 2 active per token (feed-forward 256 each)",
		fmt.Sprintf("%s of %s weight bytes (%.0f%%)", groupDigits(active), groupDigits(all), 100*float64(active)/float64(all)),
		", experts " + groupDigits(r.LayerParts[0].ExpertBytes),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestInspectBadFiles: each failure is one sentence on stderr and exit 1.
func TestInspectBadFiles(t *testing.T) {
	dir := t.TempDir()
	full, err := os.ReadFile(storiesModel)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing.gguf")
	notGGUF := write("readme.md", []byte("# not a model\n"))
	cutHeader := write("cut-header.gguf", full[:5000])
	cutData := write("cut-data.gguf", full[:800000])
	empty := write("empty.gguf", nil)
	tests := []struct {
		name, path, want string
	}{
		{"missing", missing, missing + " does not exist. Check the path."},
		{"directory", dir, dir + " is a directory, not a model file. Give the path of a .gguf file."},
		{"not gguf", notGGUF, notGGUF + ` is not a GGUF model: it starts with "# no" instead of "GGUF". Give the path of a .gguf file.`},
		{"empty", empty, empty + " is not a GGUF model: it is empty (0 bytes). Give the path of a .gguf file."},
		{"cut in header", cutHeader, cutHeader + " is incomplete: it ends at 5000 bytes but its metadata needs 5004 bytes. Download it again."},
		{"cut in data", cutData, cutData + " is incomplete: it ends at 800 KB but its tensor data needs 1.2 MB. Download it again."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runInspect(t, tt.path)
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
			}
			if want := "homering inspect: " + tt.want + "\n"; errs != want {
				t.Errorf("stderr\n got %q\nwant %q", errs, want)
			}
		})
	}
}

func TestInspectUsage(t *testing.T) {
	code, _, errs := runInspect(t)
	if code != 2 || !strings.Contains(errs, "give exactly one GGUF file") {
		t.Errorf("no file: exit %d, stderr %q", code, errs)
	}
	code, _, _ = runInspect(t, storiesModel, storiesModel)
	if code != 2 {
		t.Errorf("two files: exit %d, want 2", code)
	}
}
