package gguf

import (
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsStdlibOnly keeps the package pure: the engine validates files
// with it before any C code runs, and other tools may embed it.
func TestImportsStdlibOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(token.NewFileSet(), name, nil, goparser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if path == "C" || path == "os/exec" || path == "unsafe" || strings.HasPrefix(path, "net") || strings.Contains(strings.Split(path, "/")[0], ".") {
				t.Errorf("%s imports %q; gguf must stay stdlib-only, without cgo, exec or network", name, path)
			}
		}
	}
}
