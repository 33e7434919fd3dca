package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"homering/app/config"
	"homering/discovery/identity"
)

// cmdID prints this device's ID (creating the identity on first use).
func cmdID(_ context.Context, e env) int {
	usage := "Usage: homering id\n\nPrints this device's ID, which other devices pair with and show (creates it on first use).\n"
	if exit, ok := parseFlags(newFlags(e, "id", usage), e.args); !ok {
		return exit
	}
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return fail(e.stderr, err)
	}
	id, err := identity.LoadOrCreate(dir, time.Now(), rand.Reader)
	if err != nil {
		return fail(e.stderr, err)
	}
	fmt.Fprintln(e.stdout, id.ID)
	return 0
}
