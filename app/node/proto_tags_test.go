package node

import (
	"testing"

	"homering/internal/jsontags"
)

// The ring control messages are JSON on the link: every field spells its
// name (no Go-field-name JSON on any wire).
func TestControlFieldsNamed(t *testing.T) {
	if missing := jsontags.Missing(PeerProfile{}, JobAsk{}, JobReady{}); len(missing) > 0 {
		t.Errorf("fields without a json tag in the control messages: %v", missing)
	}
}
