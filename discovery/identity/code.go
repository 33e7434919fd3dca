package identity

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Code is a one-time pairing code: eight random digits and a Luhn check digit.
type Code string

// Sentinels of code parsing.
var (
	ErrCodeFormat = errors.New("identity: a pairing code has 9 digits, like 123-456-789")
	ErrCodeTypo   = errors.New("identity: the pairing code has a typo (its check digit does not match); type it again from the other device's screen")
)

// NewCode draws a code from random (crypto/rand in production).
func NewCode(random io.Reader) (Code, error) {
	var buf [8]byte
	digits := make([]byte, 0, 9)
	for len(digits) < 8 {
		if _, err := io.ReadFull(random, buf[:]); err != nil {
			return "", fmt.Errorf("identity: read random for pairing code: %w", err)
		}
		for _, b := range buf {
			// Rejection sampling keeps every digit uniform (250 = 25·10).
			if b < 250 && len(digits) < 8 {
				digits = append(digits, '0'+b%10)
			}
		}
	}
	digits = append(digits, luhn10(string(digits)))
	return Code(digits), nil
}

// ParseCode accepts nine digits with any dashes or spaces and checks the check digit.
func ParseCode(s string) (Code, error) {
	s = strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s))
	if len(s) != 9 {
		return "", ErrCodeFormat
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", ErrCodeFormat
		}
	}
	if luhn10(s[:8]) != s[8] {
		return "", ErrCodeTypo
	}
	return Code(s), nil
}

// String shows the code as 123-456-789.
func (c Code) String() string {
	if len(c) != 9 {
		return string(c)
	}
	return string(c[0:3]) + "-" + string(c[3:6]) + "-" + string(c[6:9])
}

// luhn10 returns the check digit that makes s+digit pass the Luhn test.
func luhn10(s string) byte {
	sum := 0
	double := true // the digit left of the check digit is doubled
	for i := len(s) - 1; i >= 0; i-- {
		d := int(s[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		double = !double
		sum += d
	}
	return byte('0' + (10-sum%10)%10)
}
