// Package jsontags checks, for tests, that a JSON protocol spells every
// field's name: each exported field of every struct reachable from the
// given types has a json tag. A struct encoded by Go's field names changes
// its protocol when someone renames a field; a tag makes the name part of
// the protocol. Only tests import this package.
package jsontags
