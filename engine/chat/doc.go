// Package chat turns a conversation into the prompt text a model was trained
// on. It is pure Go: no I/O, no cgo.
//
// Model: a conversation is an ordered list of Messages (Role, Content). A
// Formatter renders it to one string; with addAssistant the string ends with
// the opening of an assistant turn, so that generation continues as the
// assistant. Formatters never tokenize: the caller tokenizes the result with
// special-token parsing on, so that markers such as <|im_start|> become the
// model's special tokens where its vocabulary has them.
//
// Where templates live: this package holds ChatML, the fallback for models
// whose GGUF carries no tokenizer.chat_template (stories260K, our generated
// test models). A GGUF's own template is applied by engine/llama, which hands
// the template string to llama.cpp's llama_chat_apply_template (the same
// pattern-matched set of templates llama.cpp itself supports) and returns a
// Formatter from this package's interface. ChatML here is byte-identical to
// llama.cpp's "chatml" template; engine/llama's tests prove it.
package chat
