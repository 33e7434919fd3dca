// Package pull downloads a GGUF model into the model folder: by URL or by
// Hugging Face reference, resumable with HTTP Range, verified against the
// SHA-256 the server publishes, and checked to parse as GGUF before it is
// given its name.
//
// The invariant the model list relies on: a file named NAME.gguf in the
// model folder is whole. Bytes arrive in NAME.gguf.partial (the scan reads
// *.gguf only), and only a file whose size, checksum and GGUF header check
// out is renamed to NAME.gguf, atomically. A download that fails keeps its
// partial for the next try to resume, except when its bytes are known to be
// wrong (checksum or GGUF refused): then the partial is deleted.
//
// The network is an *http.Client (Options.Client), so tests serve files
// from httptest servers that honour or ignore Range, cut the connection
// mid-file or publish a wrong checksum.
package pull
