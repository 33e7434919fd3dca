package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"homering/discovery/identity"
)

// TXTVersion is the TXT record format this package writes.
const TXTVersion = 1

// MaxNameBytes bounds a device name in a TXT record.
const MaxNameBytes = 63

// ErrTXT means an advertisement could not be decoded.
var ErrTXT = errors.New("discovery: advertisement is not a valid Homering TXT record")

// Record is what one advertisement says about a device.
type Record struct {
	Version    int
	ID         identity.DeviceID
	Name       string
	App        string
	ProtoMin   uint16
	ProtoMax   uint16
	Contribute bool
	Port       uint16
	Run        string
}

// EncodeTXT returns the TXT strings of r, version TXTVersion.
func (r Record) EncodeTXT() []string {
	c := "0"
	if r.Contribute {
		c = "1"
	}
	return []string{
		"v=" + strconv.Itoa(TXTVersion),
		"id=" + r.ID.Compact(),
		"name=" + truncateUTF8(r.Name, MaxNameBytes),
		"app=" + r.App,
		fmt.Sprintf("proto=%d-%d", r.ProtoMin, r.ProtoMax),
		"c=" + c,
		"port=" + strconv.Itoa(int(r.Port)),
		"run=" + r.Run,
	}
}

// DecodeTXT parses TXT strings written by EncodeTXT of any version ≥ 1.
func DecodeTXT(txt []string) (Record, error) {
	kv := map[string]string{}
	for _, s := range txt {
		k, v, _ := strings.Cut(s, "=")
		if _, dup := kv[k]; !dup { // RFC 6763 §6.4: the first occurrence wins
			kv[k] = v
		}
	}
	var r Record
	v, err := strconv.Atoi(kv["v"])
	if err != nil || v < 1 {
		return Record{}, fmt.Errorf("version %q: %w", kv["v"], ErrTXT)
	}
	r.Version = v
	if r.ID, err = identity.ParseDeviceID(kv["id"]); err != nil {
		return Record{}, fmt.Errorf("id: %w: %w", ErrTXT, err)
	}
	port, err := strconv.ParseUint(kv["port"], 10, 16)
	if err != nil || port == 0 {
		return Record{}, fmt.Errorf("port %q: %w", kv["port"], ErrTXT)
	}
	r.Port = uint16(port)
	r.Name = truncateUTF8(kv["name"], MaxNameBytes)
	r.App = kv["app"]
	if p, ok := kv["proto"]; ok {
		lo, hi, _ := strings.Cut(p, "-")
		mn, err1 := strconv.ParseUint(lo, 10, 16)
		mx, err2 := strconv.ParseUint(hi, 10, 16)
		if err1 != nil || err2 != nil || mn > mx {
			return Record{}, fmt.Errorf("proto %q: %w", p, ErrTXT)
		}
		r.ProtoMin, r.ProtoMax = uint16(mn), uint16(mx)
	}
	r.Contribute = kv["c"] == "1"
	r.Run = kv["run"]
	return r, nil
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 { // do not cut inside a rune
		n--
	}
	return s[:n]
}
