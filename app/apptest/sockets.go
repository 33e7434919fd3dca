//go:build linux

package apptest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket is one socket of a process, from /proc/PID/net/{tcp,tcp6,udp,udp6}.
type Socket struct {
	Proto  string // tcp, tcp6, udp, udp6
	Local  netip.AddrPort
	Listen bool // TCP LISTEN, or any bound UDP socket
}

func (s Socket) String() string {
	return fmt.Sprintf("%s %s listen=%v", s.Proto, s.Local, s.Listen)
}

// Sockets lists the sockets that process pid owns. /proc/PID/net/* lists the
// whole network namespace; the process's own are those whose inode appears
// among its file descriptors.
func Sockets(pid int) ([]Socket, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []Socket
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, proto))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			local, err := parseProcAddr(fields[1])
			if err != nil {
				_ = f.Close() // a /proc file, read only
				return nil, err
			}
			st := fields[3]
			out = append(out, Socket{Proto: proto, Local: local, Listen: (strings.HasPrefix(proto, "tcp") && st == "0A") || strings.HasPrefix(proto, "udp")})
		}
		_ = f.Close() // a /proc file, read only
	}
	return out, nil
}

// parseProcAddr decodes "0100007F:1F90" (IPv4, little-endian words) or the
// 32-hex-digit IPv6 form.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	// The kernel prints each 32-bit word in host (little-endian) order.
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}
