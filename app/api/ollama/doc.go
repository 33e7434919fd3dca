// Package ollama translates between Ollama's HTTP API (POST /api/chat, POST
// /api/generate, GET /api/tags) and the agent's chat types in
// app/api/apitype. Pure: JSON types and functions, no I/O.
//
// Streaming is Ollama's default: NDJSON, one object per token with done
// false, then one with done true, done_reason ("stop" or "length") and the
// counts and durations (nanoseconds). "stream": false gives one object.
// Options understood: temperature, top_p, top_k, num_predict, num_ctx, seed;
// others are ignored as Ollama ignores unknown ones. format "json" (any JSON
// object) or a JSON schema becomes the request's JSON schema, which the
// engine enforces with a grammar; any other format is refused. /api/generate with raw
// sends the prompt without the chat template; otherwise the prompt is one
// user message after the optional system.
package ollama
