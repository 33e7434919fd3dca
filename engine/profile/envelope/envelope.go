package envelope

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrMalformed is wrapped when a file is not a checksummed envelope.
	ErrMalformed = errors.New("envelope: not a checksummed JSON file")
	// ErrChecksum is returned when the payload does not match its checksum.
	ErrChecksum = errors.New("envelope: contents fail their checksum")
)

// Seal returns v as a file: {"sha256":"<hex>","<field>":<v as JSON>}.
func Seal(field string, v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	name, err := json.Marshal(field)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	sum := sha256.Sum256(payload) // json.Marshal's output is compact
	var b bytes.Buffer
	b.WriteString(`{"sha256":"`)
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteString(`",`)
	b.Write(name)
	b.WriteByte(':')
	b.Write(payload)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Open returns the payload under field of a file Seal wrote, once it
// matches its checksum.
func Open(file []byte, field string) (json.RawMessage, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(file, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var want string
	if err := json.Unmarshal(f["sha256"], &want); err != nil {
		return nil, fmt.Errorf("%w: no sha256 string", ErrMalformed)
	}
	payload, ok := f[field]
	if !ok {
		return nil, fmt.Errorf("%w: no %q field", ErrMalformed, field)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if sum := sha256.Sum256(compact.Bytes()); hex.EncodeToString(sum[:]) != want {
		return nil, ErrChecksum
	}
	return payload, nil
}
