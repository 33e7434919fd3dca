package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
)

const statusUsage = `Usage: homering status [--next] [--json]

Shows this device, the plan the next chat runs, and the last ring it ran as
head: each device's windows, predicted vs measured ms per token, memory
pressure.

Flags:
`

// cmdStatus is `homering status`: this device, and the last ring it ran as
// head with each device's windows, predicted and measured ms per token,
// memory pressure and link RTT.
func cmdStatus(ctx context.Context, e env) int {
	fs := newFlags(e, "status", statusUsage)
	asJSON := fs.Bool("json", false, "print the ring status as JSON")
	next := fs.Bool("next", false, "print only the plan the next chat runs (with --json: the device map's JSON)")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	if *next {
		p, err := c.Plan(ctx)
		if err != nil {
			return fail(e.stderr, err)
		}
		if *asJSON {
			return printJSON(e.stdout, p)
		}
		printNext(e.stdout, p)
		return 0
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
	if j := st.Serving; j != nil {
		fmt.Fprintln(e.stdout, servingText(*j, time.Now()))
	}
	if st.ChatAPI != "" {
		fmt.Fprintf(e.stdout, "chat API %s (OpenAI clients: base URL %s/v1; Anthropic and Ollama clients: %s)\n", st.ChatAPI, st.ChatAPI, st.ChatAPI)
		if st.ChatAPIShared {
			fmt.Fprintf(e.stdout, "chat API shared with this network: %s (other computers send the API key)\n", strings.Join(sharedURLs(st), ", "))
		}
	}
	for _, p := range st.Problems {
		what := "problem"
		if p.Severity == "warning" {
			what = "warning"
		}
		fmt.Fprintf(e.stdout, "%s: %s %s %s\n", what, p.Title, p.Text, p.Fix)
	}
	if p, err := c.Plan(ctx); err == nil {
		printNext(e.stdout, p)
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

// servingText says whose chat this device serves, with which layers and
// memory: "serving the chat of kitchen (ABCDEFG): layers 11-19 (4 on the
// GPU), 24 MiB of memory, for 12s".
func servingText(j apitype.ServingJob, now time.Time) string {
	who := j.HeadID.Short()
	if j.HeadName != "" {
		who = j.HeadName + " (" + who + ")"
	}
	verb := "serving"
	if j.Idle {
		verb = "holding (idle between its requests)"
	}
	if len(j.Layers) == 0 {
		return fmt.Sprintf("%s the chat of %s: getting its layers ready", verb, who)
	}
	var ls []string
	gpu := 0
	for _, w := range j.Layers {
		ls = append(ls, layerSpan(w))
		gpu += w.GPU
	}
	on := ""
	if gpu > 0 {
		on = fmt.Sprintf(" (%d on the GPU)", gpu)
	}
	return fmt.Sprintf("%s the chat of %s: layers %s%s, %.1f MiB of memory, for %s", verb, who, strings.Join(ls, ", "), on,
		float64(j.MemoryBytes)/(1<<20), now.Sub(j.Since).Round(time.Second))
}

// layerSpan is a window's layers as a person reads them: "11-19", "4".
func layerSpan(w apitype.Window) string {
	if w.End-w.Start == 1 {
		return strconv.Itoa(w.Start)
	}
	return fmt.Sprintf("%d-%d", w.Start, w.End-1)
}

// printNext prints the plan the next chat runs: each device of its ring
// with its layers.
func printNext(w io.Writer, p apitype.Plan) {
	switch {
	case p.Problem != nil:
		fmt.Fprintf(w, "next chat: %s %s %s\n", p.Problem.Title, p.Problem.Text, p.Problem.Fix)
		return
	case p.K == 0:
		fmt.Fprintln(w, "next chat: no plan yet")
		return
	}
	n := 0
	for _, d := range p.Devices {
		if d.InRing {
			n++
		}
	}
	fmt.Fprintf(w, "next chat: %s on %d device(s), k=%d, %d layers, predicted %.2f ms/token, %d chat(s) at once\n", p.Model, n, p.K, p.Layers, p.PredictedMs, p.Streams)
	for _, d := range p.Devices {
		if !d.InRing {
			continue
		}
		var ws []string
		for _, win := range d.Windows {
			ws = append(ws, fmt.Sprintf("%d-%d", win.Start, win.End-1))
		}
		fmt.Fprintf(w, "  %s %-10s %-6s layers %s, case %s, %.2f ms; %s\n", d.Short, d.Name, d.Role, strings.Join(ws, " "), d.Case, d.PredictedMs,
			placement(d.Windows, cmp.Or(d.GPUName, d.GPU), d.VRAMBytes, d.VRAMFreeBytes))
	}
}

// sharedURLs are the chat API's base URLs on this device's network
// addresses: each used interface's address with the API's port.
func sharedURLs(st apitype.Status) []string {
	port := strconv.Itoa(config.DefaultAPIPort)
	if u, err := url.Parse(st.ChatAPI); err == nil && u.Port() != "" {
		port = u.Port()
	}
	var out []string
	for _, i := range st.Interfaces {
		if !i.Used {
			continue
		}
		for _, a := range i.Addrs {
			p, err := netip.ParsePrefix(a)
			if err != nil || p.Addr().IsLinkLocalUnicast() {
				continue // a link-local address needs a zone a URL cannot carry well
			}
			out = append(out, "http://"+net.JoinHostPort(p.Addr().String(), port))
		}
	}
	if len(out) == 0 {
		out = append(out, "every address of this device, port "+port)
	}
	return out
}
