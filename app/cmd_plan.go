package app

import (
	"context"
	"fmt"
)

// cmdPlan is being written; see the issue that owns it.
func cmdPlan(_ context.Context, e env) int {
	fmt.Fprintln(e.stderr, "homering: this command is not built yet.")
	return 1
}
