package deviceid

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

// ID is SHA-256 of a device's certificate (DER). The zero value is no device.
type ID [32]byte

// Sentinels of device ID parsing.
var (
	ErrLength = errors.New("identity: a device ID has 52 characters and 4 check characters (56 without dashes)")
	ErrCheck  = errors.New("identity: the device ID has a typo (a check character does not match)")
	ErrChars  = errors.New("identity: a device ID uses only the letters A-Z and the digits 2-7")
)

const luhnAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// IsZero reports whether id is the zero value.
func (id ID) IsZero() bool { return id == ID{} }

// Compare orders IDs by their bytes (-1, 0 or +1), for sorted maps and
// stable outputs; the order has no meaning beyond being total.
func (id ID) Compare(o ID) int { return bytes.Compare(id[:], o[:]) }

// Compact is the 52-character base32 form without check characters or dashes:
// the form used inside TXT records and file names.
func (id ID) Compact() string { return b32.EncodeToString(id[:]) }

// String is the readable form: four blocks of 13 characters, each with a Luhn
// check character appended, in groups of seven joined by dashes. The zero ID
// is "".
func (id ID) String() string {
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
func (id ID) Short() string {
	if id.IsZero() {
		return ""
	}
	return id.Compact()[:7]
}

// MarshalText writes the readable form.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText accepts what Parse accepts, and "" as the zero ID (what
// MarshalText writes for it): JSON documents that may hold no device read
// back as they were written. Code that needs a device checks IsZero.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ID{}
		return nil
	}
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// Parse accepts the readable form (check characters verified) or the
// compact form, in any case, with or without dashes and spaces.
func Parse(s string) (ID, error) {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(luhnAlphabet, s[i]) < 0 {
			return ID{}, fmt.Errorf("%q: %w", s, ErrChars)
		}
	}
	switch len(s) {
	case 56:
		var raw strings.Builder
		for i := range 4 {
			block, check := s[i*14:i*14+13], s[i*14+13]
			if luhn32(block) != check {
				return ID{}, ErrCheck
			}
			raw.WriteString(block)
		}
		s = raw.String()
	case 52:
	default:
		return ID{}, fmt.Errorf("%d characters: %w", len(s), ErrLength)
	}
	b, err := b32.DecodeString(s)
	if err != nil || len(b) != 32 {
		return ID{}, fmt.Errorf("decode %q: %w", s, ErrChars)
	}
	id := ID(b)
	// Reject the all-zero ID and spellings whose unused trailing bits are set:
	// one device must have exactly one ID string.
	if id.IsZero() || id.Compact() != s {
		return ID{}, fmt.Errorf("%q is not a device ID: %w", s, ErrChars)
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

// ForName is a valid, stable ID made from a name: SHA-256 of the name, as if
// it were a certificate. For tests and fixtures that name their devices "a",
// "b": no real device has it unless its certificate's DER is that name.
func ForName(name string) ID { return sha256.Sum256([]byte(name)) }
