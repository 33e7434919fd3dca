// Package frontend embeds the built web UI (chat and device map). dist/ keeps a
// committed .gitkeep so that go:embed compiles on a fresh clone before the
// first `npm run build`.
package frontend

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// FS returns the built UI with dist/ as its root.
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at compile time; Sub cannot fail on it
	}
	return sub
}
