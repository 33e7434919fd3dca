package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/app/config"
	"homering/discovery/mdns"
)

const doctorUsage = `Usage: homering doctor [--json] [DEVICE]

Says what discovery uses and tries, and why a device may be invisible. With
DEVICE (its ID, name or address) it also tries a link to it and says why it
fails. Exits 1 when a check fails.

Flags:
`

// cmdDoctor prints what discovery uses and tries; with DEVICE it also tries a
// link to that device and says why it might fail. Exit 1 when a check fails.
func cmdDoctor(ctx context.Context, e env) int {
	fs := newFlags(e, "doctor", doctorUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	c, dir, err := agentClient()
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
	if ch, ok := firewallDoctor(dir); ok {
		d.Checks = append(d.Checks, ch)
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

// Windows Firewall. The agent needs inbound TCP on its link port (peers
// connect to it) and UDP 5353 (mDNS queries and answers). The doctor reads
// the firewall's own settings from the registry (firewall_windows.go: no
// process to start, no localised text to parse) and says on which network
// types (Windows' profiles: Private, Public, Domain) the firewall is on and
// blocks either. Elsewhere there is no such check (errNoFirewall).

// fwRule is one firewall rule as Windows stores it in the registry:
// "v2.30|Action=Allow|Active=TRUE|Dir=In|Protocol=6|Profile=Private|
// LPort=47470|App=C:\...\homering.exe|Name=Homering|".
type fwRule struct {
	Name              string
	App               string // program, environment variables expanded; "": any
	Active, Allow, In bool
	Protocol          int      // 6 TCP, 17 UDP; 0: any
	LPorts            []string // "47470", "5000-5010", keywords (RPC…); none: any
	Profiles          []string // Domain, Private, Public; none: all
}

func parseFwRule(v string) fwRule {
	var r fwRule
	for _, f := range strings.Split(v, "|") {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "Action":
			r.Allow = val == "Allow"
		case "Active":
			r.Active = strings.EqualFold(val, "TRUE")
		case "Dir":
			r.In = val == "In"
		case "Protocol":
			r.Protocol, _ = strconv.Atoi(val) // not a number: matches only "any"
		case "LPort":
			r.LPorts = append(r.LPorts, strings.Split(val, ",")...)
		case "Profile":
			r.Profiles = append(r.Profiles, val)
		case "App":
			r.App = expandPercent(val)
		case "Name":
			r.Name = val
		}
	}
	return r
}

// expandPercent expands Windows' %NAME% environment variables.
func expandPercent(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '%')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(s[i+1:], '%')
		}
		if j < 0 {
			return b.String() + s
		}
		b.WriteString(s[:i])
		if v, ok := os.LookupEnv(s[i+1 : i+1+j]); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+2])
		}
		s = s[i+j+2:]
	}
}

// matches reports whether r applies to inbound proto traffic to port (0:
// a port chosen at run time, which only a rule for every port covers) of
// the program exe on a network of profile.
func (r fwRule) matches(profile string, proto, port int, exe string) bool {
	if !r.Active || !r.In || (r.Protocol != 0 && r.Protocol != proto) ||
		(r.App != "" && !strings.EqualFold(r.App, exe)) {
		return false
	}
	if len(r.Profiles) > 0 && !containsFold(r.Profiles, profile) {
		return false
	}
	if len(r.LPorts) == 0 {
		return true
	}
	for _, lp := range r.LPorts {
		lo, hi, isRange := strings.Cut(lp, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && port != 0 && a <= port && port <= b {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// fwState is the firewall's settings: whether it is on per profile, and its
// rules (local and group policy).
type fwState struct {
	On    map[string]bool // Domain, Private, Public
	Rules []fwRule
}

// allows reports whether the firewall lets inbound proto/port traffic reach
// exe on a network of profile: off, or an allow rule and no block rule
// (a block rule wins in Windows Firewall).
func (st fwState) allows(profile string, proto, port int, exe string) bool {
	if !st.On[profile] {
		return true
	}
	allowed := false
	for _, r := range st.Rules {
		if r.matches(profile, proto, port, exe) {
			if !r.Allow {
				return false
			}
			allowed = true
		}
	}
	return allowed
}

var fwProfiles = []string{"Private", "Public", "Domain"}

// firewallCheck is the doctor's line about st for the agent exe listening
// for links on linkPort (0: any free port). It fails when a private network
// (a home's, once Windows is told so) blocks either; on Public or Domain
// networks a block is reported, since the installer's rule is for private
// networks only.
func firewallCheck(st fwState, exe string, linkPort int) apitype.Check {
	var on []string
	for _, p := range fwProfiles {
		if st.On[p] {
			on = append(on, p)
		}
	}
	ch := apitype.Check{Name: "windows firewall", OK: true}
	if len(on) == 0 {
		ch.Detail = "off on every network type: it blocks nothing."
		return ch
	}
	link := fmt.Sprintf("TCP %d", linkPort)
	if linkPort == 0 {
		link = "TCP on the link port (chosen at start: only a rule for the program covers it)"
	}
	var blocked []string
	for _, c := range []struct {
		what, why string
		proto     int
		port      int
	}{
		{link, "links: other devices cannot connect to this one", 6, linkPort},
		{"UDP 5353", "mDNS: other devices may not see this one", 17, 5353},
	} {
		var where []string
		for _, p := range on {
			if !st.allows(p, c.proto, c.port, exe) {
				where = append(where, p)
				if p == "Private" {
					ch.OK = false
				}
			}
		}
		if len(where) > 0 {
			blocked = append(blocked, fmt.Sprintf("inbound %s (%s) on %s networks", c.what, c.why, strings.Join(where, " and ")))
		}
	}
	if len(blocked) == 0 {
		ch.Detail = fmt.Sprintf("on for %s networks; allows inbound %s (links) and UDP 5353 (mDNS) to %s.", strings.Join(on, ", "), link, exe)
		return ch
	}
	ch.Detail = fmt.Sprintf("on for %s networks; it blocks %s. The installer adds a rule for private networks; allow Homering when Windows asks, and make your home network Private (Settings, Network, Properties).",
		strings.Join(on, ", "), strings.Join(blocked, "; "))
	return ch
}

// firewallDoctor is the firewall's line for the agent of the config
// directory dir, if this OS has a firewall the doctor knows (Windows).
func firewallDoctor(dir string) (apitype.Check, bool) {
	st, err := firewallState()
	if errors.Is(err, errNoFirewall) {
		return apitype.Check{}, false
	}
	cfg, cerr := config.Load(dir)
	if cerr != nil {
		cfg = config.Default()
	}
	if err != nil {
		return apitype.Check{Name: "windows firewall", OK: true, Detail: fmt.Sprintf(
			"its settings cannot be read (%v); make sure it lets Homering receive on TCP %d and UDP 5353.", err, cfg.LinkPort)}, true
	}
	exe, _ := os.Executable() // "": then only rules for every program count
	return firewallCheck(st, exe, cfg.LinkPort), true
}
