package app

import (
	"context"
	"flag"
	"fmt"
	"time"
)

// cmdPair shows a pairing code (no arguments, on the device to trust) or
// enters one (DEVICE CODE, on the head).
func cmdPair(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("pair", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	noWait := fs.Bool("no-wait", false, "show the code and return without waiting for the head")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(e.args); err != nil {
		return 2
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
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
		fmt.Fprintf(e.stdout, "Paired with %s (%s). Both devices now trust each other.\n", orDash(p.Name), p.ID)
		return 0
	case 0:
	default:
		fmt.Fprintln(e.stderr, "Usage: homering pair            (on the device to trust: shows a code)\n       homering pair DEVICE CODE (on the head: DEVICE is its ID, name or address)")
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
	shown := time.Now()
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
				fmt.Fprintf(e.stdout, "Paired with %s (%s).\n", orDash(ps.Last.Name), ps.Last.Peer)
				return 0
			}
			return fail(e.stderr, fmt.Errorf("pairing failed: %s", ps.Last.Error))
		}
		if !ps.Open {
			return fail(e.stderr, fmt.Errorf("the code expired; run homering pair again"))
		}
	}
}
