package profile

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestPackageDocs requires a doc.go with a package comment in this package
// and its subpackages.
func TestPackageDocs(t *testing.T) {
	for _, dir := range []string{".", "sysinfo", "calib", "modelprof", "envelope"} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, dir+"/doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if f.Doc == nil || len(strings.Fields(f.Doc.Text())) < 30 {
			t.Errorf("%s/doc.go: the package comment is missing or too short to be a spec", dir)
		}
	}
	if _, err := os.Stat("doc.go"); err != nil {
		t.Error(err)
	}
}
