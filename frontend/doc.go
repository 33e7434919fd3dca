// Package frontend embeds the built web UI (chat and device map), which the
// agent serves on loopback and the window shows; FS returns it. The UI's
// source is src/ (Svelte), built into dist/ by `npm run build` (build/setup.sh
// does it). dist/ keeps a committed .gitkeep so that go:embed compiles on a
// fresh clone before the first build.
package frontend
