//go:build !desktop

package window

import (
	"context"
	"errors"
	"strings"
	"testing"

	"homering/app/api/client"
)

// TestPlainBuildHasNoWindow: without the desktop tags Run says how to get a
// window instead of failing to link GTK.
func TestPlainBuildHasNoWindow(t *testing.T) {
	err := Run(context.Background(), Options{Client: func() (*client.Client, error) { return nil, errors.New("unused") }})
	if !errors.Is(err, ErrNoWindow) || !strings.Contains(err.Error(), "build/build-desktop.sh") {
		t.Errorf("Run = %v, want ErrNoWindow naming build/build-desktop.sh", err)
	}
}
