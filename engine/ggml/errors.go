package ggml

import (
	"errors"
	"fmt"

	"homering/engine/gguf"
)

// Sentinels. Every error the package returns wraps one of these (or is an
// *UnsupportedError), with a sentence of context about what was wrong.
var (
	ErrNotGGUF       = errors.New("ggml: file is not a GGUF model")
	ErrTruncated     = errors.New("ggml: GGUF file is truncated; download it again")
	ErrCorrupt       = errors.New("ggml: GGUF file is malformed")
	ErrBadModel      = errors.New("ggml: model does not have the shape its architecture needs")
	ErrBadWindow     = errors.New("ggml: invalid window parameters")
	ErrBadInput      = errors.New("ggml: invalid evaluation input")
	ErrNoGPU         = errors.New("ggml: no GPU device on this machine; run every layer on the CPU")
	ErrClosed        = errors.New("ggml: model or window is closed")
	ErrInUse         = errors.New("ggml: model still has open windows; close them first")
	ErrEval          = errors.New("ggml: evaluation failed")
	ErrUnsupported   = errors.New("ggml: model is not supported")
	ErrOutOfContext  = errors.New("ggml: position is beyond the window's context size")
	ErrBadByteRange  = errors.New("ggml: byte range is outside the model file")
	ErrUnsupportedOS = errors.New("ggml: operation is not available on this operating system")
	ErrNotHeld       = errors.New("ggml: the weight slice does not hold what the window needs")
	ErrGPUMemory     = errors.New("ggml: the window does not fit in the GPU's memory")
)

// NotHeldError says that a window needs layers, the token embedding or the
// output head that the model file (a weight slice) does not hold.
// errors.Is(err, ErrNotHeld) and errors.Is(err, ErrBadWindow) hold for it.
type NotHeldError struct {
	Path          string
	First, Last   int
	Embed, Output bool
	Held          gguf.Holding
}

func (e *NotHeldError) Error() string {
	want := fmt.Sprintf("layers [%d, %d)", e.First, e.Last)
	if e.Embed {
		want += " with the token embedding"
	}
	if e.Output {
		want += " with the output head"
	}
	return fmt.Sprintf("ggml: the window %s needs weights that %s does not hold (it holds %s); build the window from a slice that holds them", want, e.Path, e.Held)
}

// Is makes errors.Is match ErrNotHeld and ErrBadWindow.
func (e *NotHeldError) Is(target error) bool { return target == ErrNotHeld || target == ErrBadWindow }

// UnsupportedError says which architecture (or feature of one) this engine
// cannot run. errors.Is(err, ErrUnsupported) holds for it.
type UnsupportedError struct {
	Arch    string
	Feature string // empty when the whole architecture is unsupported
}

func (e *UnsupportedError) Error() string {
	if e.Feature != "" {
		return fmt.Sprintf("ggml: %s models with %s are not supported yet", e.Arch, e.Feature)
	}
	return fmt.Sprintf("ggml: architecture %s is not supported yet", e.Arch)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }
