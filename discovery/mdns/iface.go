package mdns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Iface is one local interface and whether discovery uses it.
type Iface struct {
	Name      string
	Index     int
	Up        bool
	Loopback  bool
	Multicast bool
	Prefixes  []netip.Prefix
	Use       bool
	Reason    string // why it is used or skipped, for doctor
}

// ErrPinnedIface means the pinned interface cannot be used.
var ErrPinnedIface = errors.New("mdns: the pinned network interface cannot be used")

// bridgePrefixes name interfaces of containers and VMs: advertising there
// exposes the device to guests, and peers are never behind them.
var bridgePrefixes = []string{"docker", "br-", "veth", "virbr", "cni", "flannel", "vmnet", "vboxnet"}

// ChooseInterfaces marks which interfaces to use. pin, when set, is the only
// interface used and must be up and multicast-capable.
func ChooseInterfaces(all []Iface, pin string) ([]Iface, error) {
	out := make([]Iface, len(all))
	found := false
	for i, f := range all {
		f.Use, f.Reason = false, ""
		switch {
		case pin != "" && f.Name != pin:
			f.Reason = "not the pinned interface " + pin
		case !f.Up:
			f.Reason = "link is down"
		case f.Loopback:
			f.Reason = "loopback"
		case !f.Multicast:
			f.Reason = "no multicast on this link"
		case pin == "" && isBridge(f.Name):
			f.Reason = "container or VM bridge"
		case !hasV4(f.Prefixes):
			f.Reason = "no IPv4 address"
		default:
			f.Use = true
			f.Reason = "used"
			if pin != "" {
				f.Reason = "pinned"
			}
		}
		if pin != "" && f.Name == pin {
			found = true
			if !f.Use {
				out[i] = f
				return out, fmt.Errorf("interface %s: %s: %w", pin, f.Reason, ErrPinnedIface)
			}
		}
		out[i] = f
	}
	if pin != "" && !found {
		return out, fmt.Errorf("interface %s does not exist: %w", pin, ErrPinnedIface)
	}
	return out, nil
}

func isBridge(name string) bool {
	for _, p := range bridgePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func hasV4(ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Addr().Is4() {
			return true
		}
	}
	return false
}

// SystemInterfaces lists this machine's interfaces with ChooseInterfaces applied.
func SystemInterfaces(pin string) ([]Iface, error) {
	nis, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("mdns: list interfaces: %w", err)
	}
	all := make([]Iface, 0, len(nis))
	for _, ni := range nis {
		f := Iface{Name: ni.Name, Index: ni.Index, Up: ni.Flags&net.FlagUp != 0, Loopback: ni.Flags&net.FlagLoopback != 0, Multicast: ni.Flags&net.FlagMulticast != 0}
		addrs, _ := ni.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if p, err := netip.ParsePrefix(ipn.String()); err == nil {
					f.Prefixes = append(f.Prefixes, p)
				}
			}
		}
		all = append(all, f)
	}
	return ChooseInterfaces(all, pin)
}

// Used returns the chosen interfaces as net.Interfaces for zeroconf.
func Used(fs []Iface) []net.Interface {
	var out []net.Interface
	for _, f := range fs {
		if f.Use {
			if ni, err := net.InterfaceByIndex(f.Index); err == nil {
				out = append(out, *ni)
			}
		}
	}
	return out
}

// ifaceFor names the used interface whose subnet holds a; "" if none.
func ifaceFor(fs []Iface, a netip.Addr) string {
	for _, f := range fs {
		if !f.Use {
			continue
		}
		for _, p := range f.Prefixes {
			if p.Contains(a.Unmap()) {
				return f.Name
			}
		}
	}
	return ""
}
