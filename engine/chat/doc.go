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
//
// Tools: llama_chat_apply_template takes only roles and contents, so a
// conversation with tools (OpenAI/Ollama function tools, tool calls, tool
// results) is rendered here, in Go, by ToolTemplate: ToolTemplateOf
// recognises the GGUF template's family by its markers (Llama 3.1-3.3, Qwen
// 2.5, Qwen 3, Mistral v0.3 and Nemo) and Render writes what that family's official
// Jinja template writes, byte for byte (tools_test.go holds each renderer to
// the templates' own output, testdata/tool_golden.json). ToolParser reads
// the family's calls back out of a streamed reply, holding back what may be
// the start of a call so that streamed content never shows half a marker.
package chat
