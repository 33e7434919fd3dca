package agent_test

import (
	"encoding/json"
	"os"
	"testing"

	"homering/app"
)

// TestHelperChild is no test: the agent's tests start this test binary as
// their `homering runner` and `homering profile` children (testChild). It
// lives in the external test package because only there may a test of
// app/agent import the composition root that builds those commands.
func TestHelperChild(t *testing.T) {
	v := os.Getenv("HOMERING_TEST_CHILD")
	if v == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(v), &args); err != nil {
		os.Exit(3)
	}
	os.Exit(app.Main(args))
}
