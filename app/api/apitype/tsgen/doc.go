// Command tsgen writes the TypeScript types of the loopback API
// (frontend/src/apitype.gen.ts) from the Go package app/api/apitype, so the
// web UI and the server cannot drift apart: `go generate ./app/api/apitype`
// rewrites the file, and this package's test fails while the committed file
// differs from what the Go types give.
//
// The mapping follows encoding/json (v1), field by field:
//
//	string                       -> string
//	bool                         -> boolean
//	int*, uint*, float*          -> number
//	time.Time                    -> string (RFC 3339)
//	time.Duration                -> number (nanoseconds)
//	any                          -> unknown
//	T (a type of the package)    -> T
//	*T                           -> T | null
//	[]T                          -> T[] | null   (a nil slice encodes as null)
//	map[string]V                 -> Record<string, V> | null
//	`json:",omitempty"` on a pointer, slice or map -> an optional field (field?: T), never null
//	`json:",omitempty"` on anything else           -> an optional field of that type
//	`json:"-"`, unexported fields and types         -> left out
//
// A string or number constant of the package becomes an exported const.
// Anything else (embedded structs, channels, funcs, other packages' types)
// is an error naming the field, so a new kind of field is added here on
// purpose rather than typed loosely. Output order is file name, then
// declaration order; comments on types and fields are carried over.
package main
