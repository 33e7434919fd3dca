//go:build !desktop

package window

import "context"

// Run in a build without the desktop tags: there is no webview to open.
func Run(ctx context.Context, o Options) error { return ErrNoWindow }

// Built reports whether this build has the Wails window.
const Built = false
