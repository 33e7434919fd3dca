package app

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/windows/registry"
)

// TestFirewallRegistry: readFirewall reads the profiles' EnableFirewall and
// the rules of both keys from a registry laid out as Windows lays out its
// firewall's (written under HKCU for the test, then deleted), and says
// what it finds at the real place (Wine has no firewall there).
func TestFirewallRegistry(t *testing.T) {
	base := fmt.Sprintf(`Software\HomeringTest-%d`, os.Getpid())
	set := func(path string, f func(k registry.Key) error) {
		k, _, err := registry.CreateKey(registry.CURRENT_USER, path, registry.ALL_ACCESS)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		if err := f(k); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{base + `\Policy\DomainProfile`, base + `\Policy\StandardProfile`, base + `\Policy\PublicProfile`,
		base + `\Policy\FirewallRules`, base + `\GPO\FirewallRules`, base + `\Policy`, base + `\GPO`, base}
	t.Cleanup(func() {
		for _, k := range keys { // children first
			_ = registry.DeleteKey(registry.CURRENT_USER, k) // what fails to go is named below
		}
		if k, err := registry.OpenKey(registry.CURRENT_USER, base, registry.QUERY_VALUE); err == nil {
			_ = k.Close()
			t.Errorf("left HKCU\\%s", base)
		}
	})
	set(base+`\Policy\DomainProfile`, func(k registry.Key) error { return k.SetDWordValue("EnableFirewall", 0) })
	set(base+`\Policy\StandardProfile`, func(k registry.Key) error { return k.SetDWordValue("EnableFirewall", 1) })
	set(base+`\Policy\PublicProfile`, func(registry.Key) error { return nil }) // no value: on
	set(base+`\Policy\FirewallRules`, func(k registry.Key) error {
		return k.SetStringValue("{1}", `v2.30|Action=Allow|Active=TRUE|Dir=In|Profile=Private|App=C:\hr\homering.exe|Name=Homering|`)
	})
	set(base+`\GPO\FirewallRules`, func(k registry.Key) error {
		return k.SetStringValue("{2}", `v2.30|Action=Allow|Active=TRUE|Dir=In|Protocol=17|LPort=5353|Name=mDNS by policy|`)
	})
	st, err := readFirewall(registry.CURRENT_USER, base+`\Policy`, base+`\GPO`)
	if err != nil {
		t.Fatal(err)
	}
	if st.On["Domain"] || !st.On["Private"] || !st.On["Public"] || len(st.Rules) != 2 {
		t.Fatalf("readFirewall = %+v; want Private and Public on, 2 rules", st)
	}
	// The rules allow the exe on Private networks (the check passes) and
	// nothing on Public ones (it says so).
	if ch := firewallCheck(st, `C:\hr\homering.exe`, 47470); !ch.OK ||
		!strings.Contains(ch.Detail, "47470 (links: other devices cannot connect to this one) on Public networks.") || strings.Contains(ch.Detail, "UDP 5353") {
		t.Errorf("firewallCheck on the rules read = %+v; want ok, TCP blocked on Public networks only", ch)
	}
	real, err := firewallState()
	t.Logf("this machine's firewall: %+v, %v", real, err)
}
