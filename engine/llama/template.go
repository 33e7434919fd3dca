package llama

/*
#include <stdlib.h>
#include "llama.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"homering/engine/chat"
)

// ErrUnknownTemplate is returned when llama.cpp does not recognise a chat
// template (it matches templates by pattern; it has no Jinja interpreter).
var ErrUnknownTemplate = errors.New("llama: llama.cpp does not know this chat template")

// Template is a chat template applied by llama.cpp's
// llama_chat_apply_template. Source is either a GGUF's Jinja template or the
// name of a built-in one ("chatml", "llama3", "mistral-v7", …).
type Template struct{ Source string }

// Name implements chat.Formatter: the built-in name, or "gguf" for a template
// taken from a file.
func (t Template) Name() string {
	if len(t.Source) < 32 {
		return t.Source
	}
	return "gguf"
}

// Format implements chat.Formatter.
func (t Template) Format(msgs []chat.Message, addAssistant bool) (string, error) {
	if len(msgs) == 0 {
		return "", chat.ErrNoMessages
	}
	// C strings for every role and content, freed when done; the message
	// array is C memory too, since it holds C pointers.
	var strs []*C.char
	defer func() {
		for _, s := range strs {
			C.free(unsafe.Pointer(s))
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		strs = append(strs, p)
		return p
	}
	arr := (*C.struct_llama_chat_message)(C.calloc(C.size_t(len(msgs)), C.size_t(unsafe.Sizeof(C.struct_llama_chat_message{}))))
	defer C.free(unsafe.Pointer(arr))
	cm := unsafe.Slice(arr, len(msgs))
	total := 0
	for i, m := range msgs {
		cm[i].role = cstr(m.Role)
		cm[i].content = cstr(m.Content)
		total += len(m.Role) + len(m.Content)
	}
	tmpl := cstr(t.Source)
	size := 2*total + 256
	for {
		buf := C.malloc(C.size_t(size))
		n := int(C.llama_chat_apply_template(tmpl, arr, C.size_t(len(msgs)), C.bool(addAssistant), (*C.char)(buf), C.int32_t(size)))
		if n < 0 {
			C.free(buf)
			return "", fmt.Errorf("%w (template starts %q)", ErrUnknownTemplate, prefix(t.Source, 40))
		}
		if n <= size {
			out := C.GoStringN((*C.char)(buf), C.int(n))
			C.free(buf)
			runtime.KeepAlive(msgs)
			return out, nil
		}
		C.free(buf)
		size = n
	}
}

func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
