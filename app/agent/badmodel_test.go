package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"homering/app/api/apitype"
	"homering/app/problem"
	"homering/engine/gguf"
	"homering/engine/runner"
	"homering/internal/testlog"
)

// copyModel puts a copy of from at to by a rename, as a download or a
// copy tool finishing does: to is a new file (a new inode).
func copyModel(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to + ".part")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".part", to); err != nil {
		t.Fatal(err)
	}
}

// damagePoints are 20 offsets of model: in its header and metadata, its
// tensor table and its tensor data.
func damagePoints(t *testing.T, model string) []int64 {
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	// The tensor table starts with the first tensor's name, length first.
	first := binary.LittleEndian.AppendUint64(nil, uint64(len(f.Tensors[0].Name)))
	table := int64(bytes.Index(raw, append(first, f.Tensors[0].Name...)))
	if table <= 24 || table >= f.DataOffset {
		t.Fatalf("tensor table found at %d, data at %d", table, f.DataOffset)
	}
	d, size := f.DataOffset, f.Size
	return []int64{
		0, 4, 8, 16, 24, 40, table / 2, // magic, version, counts, the first key, the metadata
		table, table + 8, table + (d-table)/3, table + (d-table)/2, table + 2*(d-table)/3, d - 8, // the tensor table
		d, d + 64, d + (size-d)/5, d + 2*(size-d)/5, d + 3*(size-d)/5, d + 4*(size-d)/5, size - 64, // the data
	}
}

// A model file cut short or overwritten in place while the agent serves
// it, at 20 points of its header, tensor table and data: the next chat
// ends with one sentence that names the file (or, for bytes the checks
// cannot tell from weights, answers), the engine is never left on the
// damaged mapping, and the good file put back answers again. Then the
// file cut short in the middle of a reply, under the engine's mapping
// (SIGBUS there): the reply ends with the sentence that says the file
// changed, not an engine crash, and the next chat on a good file answers.
// Real engine children; the agent is this process, so it survived.
func TestModelFileDamagedWhileServed(t *testing.T) {
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	good, err := filepath.Abs(profileModel)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	b := &Agent{dir: t.TempDir(), override: path, threads: 1, log: log, running: map[*chatRun]struct{}{}, work: NewWork()}
	b.sup = runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log})
	t.Cleanup(func() { b.Close() })
	chat := func(max int, emit func(string) error) (apitype.ChatStats, error) {
		return b.Chat(context.Background(), apitype.ChatRequest{MaxTokens: max, Messages: []apitype.ChatMessage{{Role: "user", Content: "Once upon a time"}}}, emit)
	}
	none := func(string) error { return nil }
	// sentence checks err is one problem sentence of one of codes that
	// names the file.
	sentence := func(what string, err error, codes ...problem.Code) {
		t.Helper()
		var pe *problem.Error
		if !errors.As(err, &pe) || !slices.Contains(codes, pe.Code) || !strings.Contains(pe.Text, "m.gguf") ||
			!strings.HasSuffix(pe.Text, ".") || strings.Contains(pe.Text, "\n") {
			t.Errorf("%s: chat error %#v, want a sentence naming m.gguf of %v", what, err, codes)
			return
		}
		t.Logf("%s: %s: %s", what, pe.Code, pe.Text)
	}
	answered := 0
	for i, off := range damagePoints(t, good) {
		cut := i%2 == 0
		what := fmt.Sprintf("overwritten at %d", off)
		if cut {
			what = fmt.Sprintf("cut at %d", off)
		}
		copyModel(t, good, path)
		if _, err := chat(4, none); err != nil {
			t.Fatalf("%s: the good model before: %v", what, err)
		}
		if cut {
			err = os.Truncate(path, off)
		} else {
			err = overwrite(path, off, 64)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err := chat(4, none)
		switch {
		case err == nil && cut:
			t.Errorf("%s: the chat answered from a file cut short", what)
		case err == nil:
			answered++ // weights overwritten: no check can tell them from weights
			t.Logf("%s: answered", what)
		default:
			sentence(what, err, problem.ModelLoad, problem.ModelChanged)
		}
	}
	if answered > 10 {
		t.Errorf("%d of 10 overwritten files answered: the checks see none of the damage", answered)
	}

	// Cut short in the middle of a reply, under the mapping.
	copyModel(t, good, path)
	if _, err := chat(4, none); err != nil {
		t.Fatal(err)
	}
	tokens := 0
	_, err = chat(400, func(string) error {
		if tokens++; tokens == 1 {
			return os.Truncate(path, 4096)
		}
		return nil
	})
	sentence("cut during a reply", err, problem.ModelChanged)

	// Replaced by another model in the middle of a reply: the reply ends
	// on the file it began with (its mapping outlives the rename), and the
	// next chat loads the new file.
	copyModel(t, good, path)
	other, err := filepath.Abs("../../testdata/models/gemma2-Q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	tokens = 0
	if _, err := chat(16, func(string) error {
		if tokens++; tokens == 1 {
			copyModel(t, other, path)
		}
		return nil
	}); err != nil {
		t.Errorf("replaced during a reply: %v", err)
	}
	if _, err := chat(4, none); err != nil || b.sup.Model().Arch != "gemma2" {
		t.Errorf("after the file was replaced by a gemma2 model: the engine runs %q (%v)", b.sup.Model().Arch, err)
	}

	// Deleted: the chat says so before it starts the engine.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = chat(4, none)
	sentence("deleted", err, problem.ModelUnreadable)

	copyModel(t, good, path)
	if st, err := chat(4, none); err != nil || st.CompletionTokens == 0 {
		t.Fatalf("the good model after: %+v, %v", st, err)
	}
}

// overwrite puts n bytes of 0xff over path at off, in place.
func overwrite(path string, off int64, n int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, n), off); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}
