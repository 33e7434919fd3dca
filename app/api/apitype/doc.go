// Package apitype holds the JSON types of Homering's loopback control API
// (/api/v1, served by app/api). It is a leaf shared by the server, the Go
// client, the tray, the window and generated TypeScript; it imports nothing
// but the standard library. Field names are the wire: rename nothing.
//
// Chat types (chat.go) are shared by /api/v1/chat and the translations of
// the OpenAI, Anthropic and Ollama APIs (app/api/openai, anthropic, ollama).
package apitype

// The web UI's TypeScript types (frontend/src/apitype.gen.ts) are made from
// this package; tsgen's test fails while that file is stale.
//go:generate go run ./tsgen -pkg . -o ../../../frontend/src/apitype.gen.ts
