package gguf

import (
	"errors"
	"fmt"
)

// Kinds of FormatError. Test with errors.Is(err, gguf.ErrTruncated). Each
// maps to one piece of advice in FormatError.Error.
var (
	ErrNotFound    = errors.New("gguf: file not found")
	ErrNotRegular  = errors.New("gguf: not a regular file")
	ErrNotGGUF     = errors.New("gguf: not a GGUF file")
	ErrTruncated   = errors.New("gguf: file is truncated")
	ErrBadVersion  = errors.New("gguf: unsupported GGUF version")
	ErrBadMetadata = errors.New("gguf: bad metadata")
	ErrBadTensor   = errors.New("gguf: bad tensor table")
	ErrUnsupported = errors.New("gguf: unsupported model feature")
	ErrIO          = errors.New("gguf: file cannot be read")
)

// FormatError says what is wrong with a file, where, and what to do. Its
// Error is one human sentence (two with the advice), fit for a user.
type FormatError struct {
	Path   string // as given to Open; "the GGUF data" for Read
	Kind   error  // one of the Err* kinds above
	Offset int64  // byte offset where the problem was found; -1 if none
	Detail string // what is wrong, completing "<path> ..."
	Size   int64  // file size (ErrTruncated)
	Need   int64  // bytes the file would need to hold what it announces (ErrTruncated)
	Err    error  // underlying error (I/O), if any
}

func (e *FormatError) Error() string {
	name := e.Path
	if name == "" {
		name = "the GGUF data"
	}
	switch e.Kind {
	case ErrTruncated:
		have, need := humanBytes(e.Size), humanBytes(e.Need)
		if have == need {
			have, need = fmt.Sprintf("%d bytes", e.Size), fmt.Sprintf("%d bytes", e.Need)
		}
		return fmt.Sprintf("%s is incomplete: it ends at %s but %s needs %s. Download it again.",
			name, have, e.Detail, need)
	case ErrNotFound:
		return fmt.Sprintf("%s does not exist. Check the path.", name)
	case ErrIO:
		return fmt.Sprintf("%s cannot be read (%s). Check its permissions and the disk, or copy it again.", name, e.Detail)
	case ErrNotRegular:
		return fmt.Sprintf("%s %s, not a model file. Give the path of a .gguf file.", name, e.Detail)
	case ErrNotGGUF:
		return fmt.Sprintf("%s is not a GGUF model: %s. Give the path of a .gguf file.", name, e.Detail)
	case ErrBadVersion:
		return fmt.Sprintf("%s %s. Convert the model again with a current llama.cpp.", name, e.Detail)
	case ErrUnsupported:
		return fmt.Sprintf("%s %s, which is not supported yet. Homering runs llama, mistral, qwen2, qwen3, qwen3moe, gemma2 and gemma3 models.", name, e.Detail)
	}
	where := ""
	if e.Offset >= 0 {
		where = fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	what := "damaged metadata"
	if e.Kind == ErrBadTensor {
		what = "a damaged tensor table"
	}
	return fmt.Sprintf("%s has %s%s: %s. Download or convert the model again.", name, what, where, e.Detail)
}

func (e *FormatError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// humanBytes formats n for a person: "812 bytes", "3.4 MB", "3.9 GB" (SI units).
func humanBytes(n int64) string {
	const k = 1000
	switch {
	case n < 10*k:
		return fmt.Sprintf("%d bytes", n)
	case n < k*k:
		return fmt.Sprintf("%.0f KB", float64(n)/k)
	case n < k*k*k:
		return trim(float64(n)/(k*k), "MB")
	case n < k*k*k*k:
		return trim(float64(n)/(k*k*k), "GB")
	}
	return trim(float64(n)/(k*k*k*k), "TB")
}

func trim(v float64, unit string) string {
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}
