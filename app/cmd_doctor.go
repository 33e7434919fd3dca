package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/discovery/mdns"
)

// cmdDoctor prints what discovery uses and tries; with DEVICE it also tries a
// link to that device and says why it might fail. Exit 1 when a check fails.
func cmdDoctor(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(e.args); err != nil {
		return 2
	}
	c, _, err := agentClient()
	if errors.Is(err, client.ErrNoAgent) {
		fmt.Fprintln(e.stdout, "[!!] agent: not running for this config directory; start it with 'homering headless' or the app.")
		ifs, err := mdns.SystemInterfaces("")
		for _, f := range ifs {
			fmt.Fprintf(e.stdout, "[..] interface %s: %s\n", f.Name, f.Reason)
		}
		if err != nil {
			fmt.Fprintf(e.stdout, "[!!] interfaces: %v\n", err)
		}
		return 1
	}
	if err != nil {
		return fail(e.stderr, err)
	}
	if args := fs.Args(); len(args) == 1 {
		p, err := c.Probe(ctx, args[0])
		if err != nil {
			return fail(e.stderr, err)
		}
		if *asJSON {
			printJSON(e.stdout, p)
		} else {
			for _, t := range p.Tried {
				fmt.Fprintf(e.stdout, "tried %s\n", t)
			}
			if p.OK {
				fmt.Fprintf(e.stdout, "[ok] link to %s (%s, Homering %s, protocol %d) works.\n", args[0], orDash(p.Name), p.App, p.Proto)
			} else {
				fmt.Fprintf(e.stdout, "[!!] no link to %s: %s\n", args[0], p.Error)
			}
			for _, a := range p.Advice {
				fmt.Fprintf(e.stdout, "     %s\n", a)
			}
		}
		if !p.OK {
			return 1
		}
		return 0
	}
	d, err := c.Doctor(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	if *asJSON {
		printJSON(e.stdout, d)
	} else {
		printChecks(e, d)
	}
	for _, ch := range d.Checks {
		if !ch.OK {
			return 1
		}
	}
	return 0
}

func printChecks(e env, d apitype.Doctor) {
	for _, ch := range d.Checks {
		mark := "[ok]"
		if !ch.OK {
			mark = "[!!]"
		}
		fmt.Fprintf(e.stdout, "%s %s: %s\n", mark, ch.Name, strings.TrimSpace(ch.Detail))
	}
}
