package identity

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

// DeviceID is SHA-256 of a device's certificate (DER). The zero value is no device.
type DeviceID [32]byte

// Sentinels of device ID parsing.
var (
	ErrIDLength = errors.New("identity: a device ID has 52 characters and 4 check characters (56 without dashes)")
	ErrIDCheck  = errors.New("identity: the device ID has a typo (a check character does not match)")
	ErrIDChars  = errors.New("identity: a device ID uses only the letters A-Z and the digits 2-7")
)

const luhnAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// IDFromCert returns the device ID of a DER certificate.
func IDFromCert(der []byte) DeviceID { return sha256.Sum256(der) }

// IsZero reports whether id is the zero value.
func (id DeviceID) IsZero() bool { return id == DeviceID{} }

// Compact is the 52-character base32 form without check characters or dashes:
// the form used inside TXT records and file names.
func (id DeviceID) Compact() string {
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(id[:])
}

// String is the readable form: four blocks of 13 characters, each with a Luhn
// check character appended, in groups of seven joined by dashes.
func (id DeviceID) String() string {
	if id.IsZero() {
		return ""
	}
	raw := id.Compact()
	var b strings.Builder
	for i := range 4 {
		block := raw[i*13 : (i+1)*13]
		b.WriteString(block)
		b.WriteByte(luhn32(block))
	}
	s := b.String() // 56 characters
	groups := make([]string, 0, 8)
	for i := 0; i < len(s); i += 7 {
		groups = append(groups, s[i:i+7])
	}
	return strings.Join(groups, "-")
}

// Short is the first group of the readable form, for logs and tight screens.
// It identifies a device among a household's, never for trust decisions.
func (id DeviceID) Short() string {
	if id.IsZero() {
		return ""
	}
	return id.Compact()[:7]
}

// MarshalText writes the readable form.
func (id DeviceID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText accepts what ParseDeviceID accepts.
func (id *DeviceID) UnmarshalText(b []byte) error {
	p, err := ParseDeviceID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ParseDeviceID accepts the readable form (check characters verified) or the
// compact form, in any case, with or without dashes and spaces.
func ParseDeviceID(s string) (DeviceID, error) {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(luhnAlphabet, s[i]) < 0 {
			return DeviceID{}, fmt.Errorf("%q: %w", s, ErrIDChars)
		}
	}
	switch len(s) {
	case 56:
		var raw strings.Builder
		for i := range 4 {
			block, check := s[i*14:i*14+13], s[i*14+13]
			if luhn32(block) != check {
				return DeviceID{}, ErrIDCheck
			}
			raw.WriteString(block)
		}
		s = raw.String()
	case 52:
	default:
		return DeviceID{}, fmt.Errorf("%d characters: %w", len(s), ErrIDLength)
	}
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	if err != nil || len(b) != 32 {
		return DeviceID{}, fmt.Errorf("decode %q: %w", s, ErrIDChars)
	}
	id := DeviceID(b)
	// Reject the all-zero ID and spellings whose unused trailing bits are set:
	// one device must have exactly one ID string.
	if id.IsZero() || id.Compact() != s {
		return DeviceID{}, fmt.Errorf("%q is not a device ID: %w", s, ErrIDChars)
	}
	return id, nil
}

// luhn32 is the Luhn mod N algorithm over the base32 alphabet: it catches every
// single-character error and most swaps of neighbours. s must be in the alphabet.
func luhn32(s string) byte {
	const n = 32
	factor, sum := 1, 0
	for i := len(s) - 1; i >= 0; i-- {
		addend := factor * strings.IndexByte(luhnAlphabet, s[i])
		if factor == 1 {
			factor = 2
		} else {
			factor = 1
		}
		sum += addend/n + addend%n
	}
	return luhnAlphabet[(n-sum%n)%n]
}
