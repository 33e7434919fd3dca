package app

import (
	"context"
	"fmt"
)

// cmdGenModel is being written; see the issue that owns it.
func cmdGenModel(_ context.Context, e env) int {
	fmt.Fprintln(e.stderr, "homering: this command is not built yet.")
	return 1
}
