package app

import (
	"context"
	"flag"
	"fmt"
	"time"
)

// cmdStatus is `homering status`: this device, and the last ring it ran as
// head with each device's windows, predicted and measured ms per token,
// memory pressure and link RTT.
func cmdStatus(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	asJSON := fs.Bool("json", false, "print the ring status as JSON")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	rs, err := c.Ring(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	if *asJSON {
		return printJSON(e.stdout, rs)
	}
	st, err := c.Status(ctx)
	if err != nil {
		return fail(e.stderr, err)
	}
	contrib := "off"
	if st.Contribute {
		contrib = "on, listening on " + st.Listening
	}
	fmt.Fprintf(e.stdout, "device %s (%s), contribute %s\n", st.Device.Short, st.Device.Name, contrib)
	for _, p := range st.Problems {
		fmt.Fprintf(e.stdout, "problem: %s %s %s\n", p.Title, p.Text, p.Fix)
	}
	if rs.Last == nil {
		fmt.Fprintln(e.stdout, "no ring has run from this device yet")
	} else {
		at := ""
		if rs.At != nil {
			at = fmt.Sprintf(", %s ago", time.Since(*rs.At).Round(time.Second))
		}
		fmt.Fprintf(e.stdout, "last ring: %s%s\n", rs.Model, at)
		printRing(e.stdout, rs.Last)
	}
	if rs.Note != "" {
		fmt.Fprintf(e.stdout, "the last chat ran on this device alone: %s\n", rs.Note)
	}
	if s := rs.Self; s != nil {
		fmt.Fprintf(e.stdout, "last chat on this device alone: %s, measured %.2f ms/token, predicted %.2f (calibrated by %d earlier run(s)), %.2f as profiled\n",
			s.Model, s.MeasuredMs, s.PredictedMs, s.CalibratedRuns, s.UncalibratedMs)
	}
	return 0
}
