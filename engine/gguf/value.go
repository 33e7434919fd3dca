package gguf

import (
	"fmt"
	"math"
)

// ValueType is a metadata value's type as GGUF numbers it (gguf_type).
type ValueType uint32

// GGUF metadata value types.
const (
	Uint8   ValueType = 0
	Int8    ValueType = 1
	Uint16  ValueType = 2
	Int16   ValueType = 3
	Uint32  ValueType = 4
	Int32   ValueType = 5
	Float32 ValueType = 6
	Bool    ValueType = 7
	String  ValueType = 8
	Array   ValueType = 9
	Uint64  ValueType = 10
	Int64   ValueType = 11
	Float64 ValueType = 12
)

func (t ValueType) String() string {
	switch t {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Uint16:
		return "uint16"
	case Int16:
		return "int16"
	case Uint32:
		return "uint32"
	case Int32:
		return "int32"
	case Float32:
		return "float32"
	case Bool:
		return "bool"
	case String:
		return "string"
	case Array:
		return "array"
	case Uint64:
		return "uint64"
	case Int64:
		return "int64"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("gguf_type(%d)", uint32(t))
}

// scalarSize is the encoded size of one scalar of t (strings: their length
// prefix only); 0 for types that are not scalars.
func (t ValueType) scalarSize() int64 {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64, String:
		return 8
	}
	return 0
}

// Value is one metadata value. Scalars hold uint8..uint64, int8..int64,
// float32, float64, bool or string; arrays hold a slice of one of those
// ([]string for string arrays). Nested arrays are not valid GGUF.
type Value struct {
	Type ValueType // Array for arrays
	Elem ValueType // element type of an array
	v    any
}

// Any returns the Go value (see Value).
func (v Value) Any() any { return v.v }

// Len is the number of elements of an array, 1 for a scalar.
func (v Value) Len() int {
	switch a := v.v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float32:
		return len(a)
	case []float64:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	}
	return 1
}

// asInt converts an integer scalar to int64; ok is false for other types
// and for uint64 values above MaxInt64.
func asInt(x any) (int64, bool) {
	switch n := x.(type) {
	case uint8:
		return int64(n), true
	case int8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case int16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// Int returns an integer scalar of any width as int64.
func (v Value) Int() (int64, bool) { return asInt(v.v) }

// Float returns a float32 or float64 scalar as float64.
func (v Value) Float() (float64, bool) {
	switch f := v.v.(type) {
	case float32:
		return float64(f), true
	case float64:
		return f, true
	}
	return 0, false
}

// String returns a string scalar.
func (v Value) String() (string, bool) {
	s, ok := v.v.(string)
	return s, ok
}

// Bool returns a bool scalar.
func (v Value) Bool() (bool, bool) {
	b, ok := v.v.(bool)
	return b, ok
}

// Strings returns a string array.
func (v Value) Strings() ([]string, bool) {
	s, ok := v.v.([]string)
	return s, ok
}

// Ints returns an integer array of any width as []int64.
func (v Value) Ints() ([]int64, bool) {
	var out []int64
	add := func(n int, at func(int) any) bool {
		out = make([]int64, n)
		for i := range n {
			x, ok := asInt(at(i))
			if !ok {
				return false
			}
			out[i] = x
		}
		return true
	}
	var ok bool
	switch a := v.v.(type) {
	case []uint8:
		ok = add(len(a), func(i int) any { return a[i] })
	case []int8:
		ok = add(len(a), func(i int) any { return a[i] })
	case []uint16:
		ok = add(len(a), func(i int) any { return a[i] })
	case []int16:
		ok = add(len(a), func(i int) any { return a[i] })
	case []uint32:
		ok = add(len(a), func(i int) any { return a[i] })
	case []int32:
		ok = add(len(a), func(i int) any { return a[i] })
	case []uint64:
		ok = add(len(a), func(i int) any { return a[i] })
	case []int64:
		ok = add(len(a), func(i int) any { return a[i] })
	}
	return out, ok
}

// Floats returns a float32 or float64 array as []float64.
func (v Value) Floats() ([]float64, bool) {
	switch a := v.v.(type) {
	case []float32:
		out := make([]float64, len(a))
		for i, x := range a {
			out[i] = float64(x)
		}
		return out, true
	case []float64:
		return append([]float64(nil), a...), true
	}
	return nil, false
}

// KeyValue is one metadata entry.
type KeyValue struct {
	Key   string
	Value Value
}
