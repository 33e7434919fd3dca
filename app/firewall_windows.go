package app

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// errNoFirewall is never returned on Windows (see firewall_other.go).
var errNoFirewall = errors.New("no firewall check on this OS")

// The firewall's local settings and rules, and those group policy sets.
const (
	fwPolicyKey = `SYSTEM\CurrentControlSet\Services\SharedAccess\Parameters\FirewallPolicy`
	fwGPOKey    = `SOFTWARE\Policies\Microsoft\WindowsFirewall`
)

func firewallState() (fwState, error) {
	return readFirewall(registry.LOCAL_MACHINE, fwPolicyKey, fwGPOKey)
}

// readFirewall reads EnableFirewall of each profile under policy (the
// registry's StandardProfile is the Private one) and the rules under policy
// and gpo (absent: none) from root.
func readFirewall(root registry.Key, policy, gpo string) (fwState, error) {
	st := fwState{On: map[string]bool{}}
	for p, key := range map[string]string{"Domain": "DomainProfile", "Private": "StandardProfile", "Public": "PublicProfile"} {
		k, err := registry.OpenKey(root, policy+`\`+key, registry.QUERY_VALUE)
		if err != nil {
			return fwState{}, fmt.Errorf("the %s profile: %w", p, err)
		}
		v, _, err := k.GetIntegerValue("EnableFirewall")
		_ = k.Close() // read only
		if err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fwState{}, fmt.Errorf("the %s profile: %w", p, err)
		}
		st.On[p] = err != nil || v != 0 // no value: Windows' default, on
	}
	for _, path := range []string{policy + `\FirewallRules`, gpo + `\FirewallRules`} {
		k, err := registry.OpenKey(root, path, registry.QUERY_VALUE)
		if errors.Is(err, registry.ErrNotExist) {
			continue
		}
		if err != nil {
			return fwState{}, fmt.Errorf("the rules: %w", err)
		}
		names, err := k.ReadValueNames(-1)
		for _, n := range names {
			if v, _, err := k.GetStringValue(n); err == nil {
				st.Rules = append(st.Rules, parseFwRule(v))
			}
		}
		_ = k.Close() // read only
		if err != nil {
			return fwState{}, fmt.Errorf("the rules: %w", err)
		}
	}
	return st, nil
}
