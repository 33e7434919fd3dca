// Package openai translates between OpenAI's HTTP API (the subset local
// servers such as Ollama and llama.cpp serve) and the agent's chat types in
// app/api/apitype. It is pure: JSON types and functions, no I/O; app/api
// serves it on /v1/chat/completions, /v1/completions and /v1/models.
//
// Requests: messages whose content is a string or an array of
// {"type":"text","text":…} parts (other part types are refused with a
// sentence); max_completion_tokens wins over max_tokens; n > 1, tools and
// logprobs are refused rather than silently ignored. response_format
// json_object (any JSON object) and json_schema (its schema) become the
// request's JSON schema, which the engine enforces with a grammar (whether
// or not strict is set); other types are refused.
//
// Streams are server-sent events, one `data: {chunk}` per token, a last chunk
// with finish_reason (and usage when stream_options.include_usage), then
// `data: [DONE]`. finish_reason is "stop" or "length".
package openai
