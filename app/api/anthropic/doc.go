// Package anthropic translates between Anthropic's Messages API (POST
// /v1/messages) and the agent's chat types in app/api/apitype. Pure: JSON
// types and functions, no I/O.
//
// Requests: system is a string or an array of text blocks; message content
// is a string or an array of text blocks (images and tools are refused with a
// sentence); max_tokens is required, as Anthropic requires it.
//
// A stream is server-sent events with an `event:` line naming each type, in
// this order: message_start, content_block_start (index 0, empty text),
// ping, content_block_delta × tokens (text_delta), content_block_stop,
// message_delta (stop_reason, usage.output_tokens), message_stop. Errors in
// the middle of a stream are an `error` event.
package anthropic
