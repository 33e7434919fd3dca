package jsontags

import (
	"reflect"
	"time"
)

// Missing returns "Type.Field" for every exported field without a json tag
// in the structs reachable from vs (through fields, pointers, slices, arrays
// and maps). Types with their own JSON or text encoding (time.Time, types
// implementing json.Marshaler or encoding.TextMarshaler) are not entered.
func Missing(vs ...any) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			if t.Kind() == reflect.Map {
				walk(t.Key())
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || encodesItself(t) {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag, ok := f.Tag.Lookup("json")
			if !ok {
				out = append(out, t.Name()+"."+f.Name)
			}
			if tag == "-" {
				continue
			}
			walk(f.Type)
		}
	}
	for _, v := range vs {
		walk(reflect.TypeOf(v))
	}
	return out
}

var (
	marshaler     = reflect.TypeFor[interface{ MarshalJSON() ([]byte, error) }]()
	textMarshaler = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

func encodesItself(t reflect.Type) bool {
	if t == reflect.TypeFor[time.Time]() {
		return true
	}
	p := reflect.PointerTo(t)
	return t.Implements(marshaler) || p.Implements(marshaler) || t.Implements(textMarshaler) || p.Implements(textMarshaler)
}
