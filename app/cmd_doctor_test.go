package app

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFirewallParseRule(t *testing.T) {
	t.Setenv("HOMERING_TEST_PF", `C:\Program Files`)
	got := parseFwRule(`v2.30|Action=Allow|Active=TRUE|Dir=In|Protocol=6|Profile=Private|Profile=Domain|LPort=47470|LPort=5000-5010,6000|App=%HOMERING_TEST_PF%\Homering\homering.exe|Name=Homering|`)
	want := fwRule{Name: "Homering", App: `C:\Program Files\Homering\homering.exe`, Active: true, Allow: true, In: true,
		Protocol: 6, LPorts: []string{"47470", "5000-5010", "6000"}, Profiles: []string{"Private", "Domain"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseFwRule (-want +got):\n%s", diff)
	}
	if got := expandPercent(`%NO_SUCH_VAR_HR%\x%`); got != `%NO_SUCH_VAR_HR%\x%` {
		t.Errorf("expandPercent kept %q", got)
	}
}

// TestFirewallCheck: the doctor's firewall line for the installer's rule
// (the exe, private networks), Windows' own mDNS rule, a block rule, port
// ranges and a link port chosen at start.
func TestFirewallCheck(t *testing.T) {
	const exe = `C:\Program Files\Homering\homering.exe`
	installer := `v2.30|Action=Allow|Active=TRUE|Dir=In|Profile=Private|App=C:\PROGRAM FILES\Homering\homering.exe|Name=Homering|`
	mdnsRule := `v2.30|Action=Allow|Active=TRUE|Dir=In|Protocol=17|Profile=Private|Profile=Domain|LPort=5353|App=%SystemRoot%\system32\svchost.exe|Name=mDNS (UDP-In)|`
	anyMDNS := `v2.30|Action=Allow|Active=TRUE|Dir=In|Protocol=17|Profile=Private|LPort=5353|Name=mDNS|`
	portRange := `v2.30|Action=Allow|Active=TRUE|Dir=In|Protocol=6|LPort=47000-48000|Name=range|`
	block := `v2.30|Action=Block|Active=TRUE|Dir=In|App=` + exe + `|Name=Homering blocked|`
	inactive := `v2.30|Action=Allow|Active=FALSE|Dir=In|App=` + exe + `|Name=off|`
	on := func(ps ...string) map[string]bool {
		m := map[string]bool{}
		for _, p := range ps {
			m[p] = true
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		on       map[string]bool
		rules    []string
		port     int
		ok       bool
		contains []string
	}{
		{"off", on(), nil, 47470, true, []string{"off on every network type"}},
		{"no rule", on("Private", "Public"), nil, 47470, false, []string{"blocks inbound TCP 47470", "UDP 5353", "Private and Public"}},
		{"installer's rule and any mDNS", on("Private"), []string{installer, anyMDNS}, 47470, true, []string{"allows inbound TCP 47470"}},
		{"installer's rule, Public on too", on("Private", "Public"), []string{installer, anyMDNS}, 47470, true, []string{"on Public networks", "make your home network Private"}},
		{"the installer's program rule covers mDNS too", on("Private"), []string{installer, mdnsRule}, 47470, true, nil},
		{"svchost's mDNS rule is not ours", on("Private"), []string{portRange, mdnsRule}, 47470, false, []string{"UDP 5353"}},
		{"a port range, no mDNS", on("Private"), []string{portRange}, 47470, false, []string{"UDP 5353 (mDNS"}},
		{"a port range, the port outside", on("Private"), []string{portRange, anyMDNS}, 49000, false, []string{"TCP 49000"}},
		{"a port chosen at start needs a program rule", on("Private"), []string{portRange, anyMDNS}, 0, false, []string{"only a rule for the program"}},
		{"a program rule covers it", on("Private"), []string{installer, anyMDNS}, 0, true, nil},
		{"a block rule wins", on("Private"), []string{installer, anyMDNS, block}, 47470, false, []string{"blocks inbound"}},
		{"an inactive rule counts for nothing", on("Private"), []string{inactive, anyMDNS}, 47470, false, []string{"TCP 47470"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := fwState{On: tc.on}
			for _, r := range tc.rules {
				st.Rules = append(st.Rules, parseFwRule(r))
			}
			ch := firewallCheck(st, exe, tc.port)
			if ch.OK != tc.ok || ch.Name != "windows firewall" {
				t.Errorf("check = %+v, want ok %v", ch, tc.ok)
			}
			for _, s := range tc.contains {
				if !strings.Contains(ch.Detail, s) {
					t.Errorf("detail %q lacks %q", ch.Detail, s)
				}
			}
		})
	}
}
