package halda_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs: each package of halda has a doc.go whose package comment
// is a spec, not a stub (STYLE lesson 15).
func TestPackageDocs(t *testing.T) {
	for _, dir := range []string{".", "lpsolve", "haldatest"} {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "doc.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if f.Doc == nil || len(strings.Fields(f.Doc.Text())) < 30 {
			t.Errorf("%s/doc.go: the package comment is missing or too short to be a spec", dir)
		}
	}
}
