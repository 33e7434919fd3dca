package slice

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"homering/engine/gguf"
)

// Local is a Source that first looks for a tensor in the complete slices
// of the same model already in a cache directory (a worker whose windows
// change after a re-plan keeps the layers it had) and fetches only the rest
// from Remote. Build verifies every tensor's hash whichever source gave it,
// so a damaged local file fails the build (ErrHashMismatch) rather than
// lands in a slice; build again from Remote then.
type Local struct {
	Remote Source

	files []localFile

	mu     sync.Mutex
	remote int64 // bytes read from Remote; guarded by mu
}

type localFile struct {
	f *os.File
	g *gguf.File
}

// OpenLocal opens the complete slices of model in dir (none is fine).
func OpenLocal(dir string, model [32]byte, remote Source) *Local {
	l := &Local{Remote: remote}
	paths, _ := filepath.Glob(filepath.Join(dir, hex.EncodeToString(model[:8])+"-*.gguf"))
	for _, p := range paths {
		if strings.HasSuffix(p, ".part") {
			continue
		}
		g, err := gguf.Open(p)
		if err != nil {
			continue // not a slice we can read: fetch instead
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		l.files = append(l.files, localFile{f: f, g: g})
	}
	return l
}

// ReadTensor reads from a local slice holding the whole range, else from
// Remote.
func (l *Local) ReadTensor(ctx context.Context, name string, off int64, p []byte) error {
	for _, lf := range l.files {
		t, ok := lf.g.Tensor(name)
		if !ok || off < 0 || off+int64(len(p)) > t.Size {
			continue
		}
		if _, err := lf.f.ReadAt(p, t.Offset+off); err == nil {
			return nil
		}
	}
	if err := l.Remote.ReadTensor(ctx, name, off, p); err != nil {
		return err
	}
	l.mu.Lock()
	l.remote += int64(len(p))
	l.mu.Unlock()
	return nil
}

// RemoteBytes is how many bytes came from Remote so far.
func (l *Local) RemoteBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.remote
}

// Close closes the local slices.
func (l *Local) Close() error {
	var err error
	for _, lf := range l.files {
		if e := lf.f.Close(); e != nil && err == nil {
			err = fmt.Errorf("slice: %w", e)
		}
	}
	l.files = nil
	return err
}
