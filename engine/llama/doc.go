// Package llama is Homering's only user of llama.cpp, through the pinned
// github.com/ollama/ollama/llama cgo wrapper (v0.17.4) plus a small cgo shim
// of our own over llama.h for what the wrapper does not expose.
//
// It provides four things:
//
//   - Vocab: a vocab-only load of a GGUF (no weights are read) for text on the
//     head: Tokenize, TokenToPiece, Detokenize, BOS/EOS/EOG and add-BOS exactly
//     as llama.cpp does them, and the GGUF's chat template.
//   - Formatter: the GGUF's tokenizer.chat_template applied by llama.cpp's
//     llama_chat_apply_template (which takes the template string and matches it
//     against the templates llama.cpp knows); models without a template, or with
//     one llama.cpp does not recognise, fall back to chat.ChatML.
//   - Reference: a whole llama.cpp model and context on the CPU (mmap'd
//     weights, flash attention off, F16 KV cache, the given thread count),
//     returning the logits of every token of a batch. It is the numerical
//     reference engine/ggml is held to (engine/enginetest) and the baseline of
//     bench/engine.sh; Homering never generates with it.
//   - Grammar: llama.cpp's sampler grammar (GBNF, or a JSON schema through
//     SchemaGrammar) over a Vocab's token texts, for structured output:
//     engine/head's Constraint. Control tokens are no text to it, and the
//     end of generation is allowed only once the grammar is complete.
//
// The shim reaches the wrapper's C handles (llama.Model, llama.Context keep
// them in an unexported first field) by pointer layout; the layout is checked
// at load and the pinned module version keeps it fixed.
//
// llama.cpp aborts the process on some bad input (a token id outside the
// vocabulary, a token a grammar refuses), so every id is range-checked, and
// every token a Grammar accepts checked against it, before it reaches C.
// Files are not validated here: callers check a GGUF with engine/gguf (or
// engine/ggml.Open) first.
//
// Loading initialises llama.cpp with its compiled-in CPU backend only (the
// wrapper's BackendInit would also look for GPU backend libraries) and
// silences llama.cpp's INFO and WARN logs, which the wrapper prints to stderr;
// errors still reach stderr.
package llama
