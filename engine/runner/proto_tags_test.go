package runner

import (
	"testing"

	"homering/internal/jsontags"
)

// The runner's pipe is JSON lines: every field of every message spells its
// name (no Go-field-name JSON), so renaming a Go field cannot change the
// protocol between an agent and its engine child.
func TestProtocolFieldsNamed(t *testing.T) {
	if missing := jsontags.Missing(Request{}, Event{}); len(missing) > 0 {
		t.Errorf("fields without a json tag on the runner's pipe: %v", missing)
	}
}
