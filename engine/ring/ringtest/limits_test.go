package ringtest

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// wire's payload limit is transport's frame limit less the type byte, and
// its types live in the range transport leaves to it.
func TestLimitsAgreeWithTransport(t *testing.T) {
	if wire.MaxPayload+1 != transport.MaxFrame {
		t.Errorf("wire.MaxPayload+1 = %d, transport.MaxFrame = %d", wire.MaxPayload+1, transport.MaxFrame)
	}
	if wire.TypePlanInstall < wire.Type(transport.MsgRingFirst) {
		t.Errorf("wire types start at %d, below transport's %d", wire.TypePlanInstall, transport.MsgRingFirst)
	}
}

func TestReference(t *testing.T) {
	// One layer by hand: embed 5 → [5 6]; layer 0: 31·5+1 = 156.
	if got := Reference([]int32{5}, 1, 2); got != 156 {
		t.Errorf("Reference = %d, want 156", got)
	}
}

func TestPackageDocs(t *testing.T) {
	for _, dir := range []string{".", ".."} {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "doc.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if f.Doc == nil || len(strings.Fields(f.Doc.Text())) < 30 {
			t.Errorf("%s/doc.go: the package comment is missing or too short to be a spec", dir)
		}
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := parse("x", "cmd\nno dashes"); err == nil {
		t.Error("a command without ---- was accepted")
	}
	b, err := parse("x", "# c\ncmd a=1 b\n----\nline1\nline2\n\nnext\n----\nok")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, bl := range b {
		if bl.cmd.Name != "" {
			cmds = append(cmds, bl.cmd.Name+":"+bl.want)
		}
	}
	if got, want := strings.Join(cmds, "|"), "cmd:line1\nline2|next:ok"; got != want {
		t.Errorf("parsed %q, want %q", got, want)
	}
}
