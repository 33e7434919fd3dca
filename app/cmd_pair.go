package app

import (
	"context"
	"fmt"
	"time"

	"homering/discovery/identity"
)

const pairUsage = `Usage: homering pair [flags]             (on the device to trust: shows a code)
       homering pair [flags] DEVICE CODE (on the head: DEVICE is its ID, name or address)

Pairs two devices: one shows a short code, the other enters it, and then both
trust each other.

Flags:
`

// cmdPair shows a pairing code (no arguments, on the device to trust) or
// enters one (DEVICE CODE, on the head).
func cmdPair(ctx context.Context, e env) int {
	fs := newFlags(e, "pair", pairUsage)
	noWait := fs.Bool("no-wait", false, "show the code and return without waiting for the head")
	asJSON := fs.Bool("json", false, "print JSON")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	// Pairing a device again is allowed (it renews the trust of a side that
	// lost it) but said, so that nobody wonders whether it did anything.
	wasPaired := map[identity.DeviceID]bool{}
	if ps, err := c.Peers(ctx); err == nil {
		for _, p := range ps.Peers {
			wasPaired[p.ID] = p.Paired
		}
	}
	switch args := fs.Args(); len(args) {
	case 2:
		p, err := c.EnterCode(ctx, args[0], args[1])
		if err != nil {
			return fail(e.stderr, err)
		}
		if *asJSON {
			return printJSON(e.stdout, p)
		}
		fmt.Fprintln(e.stdout, pairedLine(p.Name, p.ID, wasPaired[p.ID]))
		return 0
	case 0:
	default:
		fs.Usage()
		return 2
	}
	st, err := c.Status(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	show, err := c.ShowCode(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	if *asJSON {
		printJSON(e.stdout, show)
	} else {
		fmt.Fprintf(e.stdout, "Pairing code: %s  (valid until %s, one attempt)\nOn the head, run:  homering pair %s %s\n",
			show.Code, show.Expires.Local().Format("15:04:05"), st.Device.Short, show.Code)
	}
	if *noWait {
		return 0
	}
	progress := e.stdout
	if *asJSON {
		progress = e.stderr // stdout stays JSON
	}
	shown := time.Now()
	fmt.Fprintf(progress, "Waiting for the head to enter the code: it expires in %s (Ctrl-C stops waiting).\n", waitLeft(show.Expires, shown))
	said := shown
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 1
		case <-t.C:
		}
		ps, err := c.PairStatus(ctx)
		if err != nil {
			return fail(e.stderr, err)
		}
		if ps.Last != nil && ps.Last.At.After(shown.Add(-time.Second)) {
			if ps.Last.OK {
				fmt.Fprintln(e.stdout, pairedLine(ps.Last.Name, ps.Last.Peer, wasPaired[ps.Last.Peer]))
				return 0
			}
			return fail(e.stderr, fmt.Errorf("pairing failed: %s", ps.Last.Error))
		}
		if !ps.Open {
			return fail(e.stderr, fmt.Errorf("the code expired; run homering pair again"))
		}
		if now := time.Now(); now.Sub(said) >= pairProgressEvery {
			said = now
			fmt.Fprintf(progress, "Still waiting for the head: %s so far, the code expires in %s.\n",
				now.Sub(shown).Round(time.Second), waitLeft(show.Expires, now))
		}
	}
}

// pairProgressEvery is how often a waiting `homering pair` says it still
// waits: often enough to show it is alive, rarely enough to read.
const pairProgressEvery = 30 * time.Second

// waitLeft is the time from now until expires, in whole seconds.
func waitLeft(expires, now time.Time) time.Duration {
	return max(expires.Sub(now), 0).Round(time.Second)
}

// pairedLine is what `homering pair` prints once pairing with name (id)
// succeeded; again says the device was paired before.
func pairedLine(name string, id identity.DeviceID, again bool) string {
	if again {
		return fmt.Sprintf("Already paired with %s (%s); the code renewed the trust on both devices.", orDash(name), id)
	}
	return fmt.Sprintf("Paired with %s (%s). Both devices now trust each other.", orDash(name), id)
}
