package app

import (
	"context"
	"fmt"
)

// cmdInspect is being written; see the issue that owns it.
func cmdInspect(_ context.Context, e env) int {
	fmt.Fprintln(e.stderr, "homering: this command is not built yet.")
	return 1
}
