package app

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

const peersUsage = `Usage: homering peers [--json]
       homering peers add HOST[:PORT]
       homering peers remove DEVICE

Lists the devices seen (mDNS or added by address), or adds or removes one by
address, for networks where multicast does not reach.

Flags:
`

// cmdPeers lists devices, or adds/removes one by address.
func cmdPeers(ctx context.Context, e env) int {
	fs := newFlags(e, "peers", peersUsage)
	asJSON := fs.Bool("json", false, "print JSON (apitype.Peers)")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	args := fs.Args()
	switch {
	case len(args) == 2 && args[0] == "add":
		p, err := c.AddPeer(ctx, args[1])
		if err != nil {
			return fail(e.stderr, err)
		}
		if *asJSON {
			return printJSON(e.stdout, p)
		}
		fmt.Fprintf(e.stdout, "Added %s %s at %s (paired: %v).\n", orDash(p.Name), p.ID, strings.Join(p.Addrs, " "), p.Paired)
		return 0
	case len(args) == 2 && args[0] == "remove":
		if err := c.RemovePeer(ctx, args[1]); err != nil {
			return fail(e.stderr, err)
		}
		fmt.Fprintln(e.stdout, "Removed.")
		return 0
	case len(args) != 0:
		fs.Usage()
		return 2
	}
	ps, err := c.Peers(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	if *asJSON {
		return printJSON(e.stdout, ps)
	}
	if len(ps.Peers) == 0 {
		fmt.Fprintln(e.stdout, "No devices seen yet. Run 'homering doctor' to see what discovery tries.")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDEVICE\tPAIRED\tHOW\tINTERFACE\tADDRESSES\tLAST SEEN\tCONTRIBUTING")
	now := time.Now()
	for _, p := range ps.Peers {
		seen := "not visible"
		if p.LastSeen != nil {
			seen = now.Sub(*p.LastSeen).Round(100*time.Millisecond).String() + " ago"
		}
		how := strings.Join(p.Sources, "+")
		if p.Conflict {
			how += " (ID CONFLICT)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%v\n", orDash(p.Name), p.Short, p.Paired, orDash(how),
			orDash(strings.Join(p.Interfaces, ",")), orDash(strings.Join(p.Addrs, " ")), seen, p.Contribute)
	}
	tw.Flush()
	for _, s := range ps.SelfCopies {
		fmt.Fprintf(e.stdout, "\nWARNING: another device at %s runs with THIS device's ID: its config directory is a copy of this one.\n", strings.Join(s.Addrs, " "))
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
