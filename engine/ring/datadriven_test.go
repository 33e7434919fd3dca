package ring_test

import (
	"flag"
	"path/filepath"
	"testing"

	"homering/engine/ring/ringtest"
)

var rewrite = flag.Bool("rewrite", false, "write the actual outputs into testdata/*.txt")

// TestScripts runs the ring scenarios in testdata (STYLE lesson 3). Each file
// starts from an empty environment.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			env := ringtest.NewEnv()
			ringtest.RunFile(t, f, *rewrite, env.Handle)
		})
	}
}
