package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// field is one member of a JSON object, in the order it was sent.
type field struct {
	Key   string
	Value json.RawMessage
}

// objectFields reads a JSON object's members in their order (Jinja
// iterates a dict as Python keeps it: as inserted).
func objectFields(raw json.RawMessage) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("chat: %.40s is not a JSON object", raw)
	}
	var out []field
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{Key: k.(string), Value: v})
	}
	return out, nil
}

// pyJSON writes raw (valid JSON) as the templates' tojson filter does in
// transformers and llama.cpp: Python's json.dumps with ensure_ascii off,
// ", " and ": " between items (",\n" and indent spaces with indent > 0),
// object members in the order they were sent, numbers as written.
func pyJSON(raw json.RawMessage, indent int) (string, error) {
	var b strings.Builder
	if err := writePy(&b, bytes.TrimSpace(raw), indent, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writePy(b *strings.Builder, raw json.RawMessage, indent, level int) error {
	if len(raw) == 0 {
		return fmt.Errorf("chat: empty JSON value")
	}
	nl := func(l int) {
		if indent > 0 {
			b.WriteString("\n")
			b.WriteString(strings.Repeat(" ", indent*l))
		}
	}
	sep := ", "
	if indent > 0 {
		sep = ","
	}
	// container writes n items between open and close, as json.dumps does.
	container := func(open, close string, n int, item func(i int) error) error {
		if n == 0 {
			b.WriteString(open + close)
			return nil
		}
		b.WriteString(open)
		for i := range n {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(level + 1)
			if err := item(i); err != nil {
				return err
			}
		}
		nl(level)
		b.WriteString(close)
		return nil
	}
	switch raw[0] {
	case '{':
		fs, err := objectFields(raw)
		if err != nil {
			return err
		}
		return container("{", "}", len(fs), func(i int) error {
			writePyString(b, fs[i].Key)
			b.WriteString(": ")
			return writePy(b, bytes.TrimSpace(fs[i].Value), indent, level+1)
		})
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		return container("[", "]", len(items), func(i int) error {
			return writePy(b, bytes.TrimSpace(items[i]), indent, level+1)
		})
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		writePyString(b, s)
	default: // numbers, true, false, null: as written
		b.Write(raw)
	}
	return nil
}

// writePyString quotes s as json.dumps(ensure_ascii=False) does.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
