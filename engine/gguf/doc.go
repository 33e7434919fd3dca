// Package gguf reads and checks GGUF model files in pure Go (standard library
// only: no cgo, no os/exec, no net), so that every file is validated before
// any C code (ggml, llama.cpp) sees it: bad input gives a *FormatError with a
// sentence for the user, never a panic or a C abort.
//
// # Format (GGUF v2 and v3, little-endian)
//
//	magic "GGUF" | version u32 | n_tensors u64 | n_kv u64
//	n_kv x   { key: string | type u32 | value }
//	n_tensors x { name: string | n_dims u32 | ne[n_dims] u64 | ggml_type u32 | offset u64 }
//	padding to general.alignment (u32, power of two, default 32)
//	data section: each tensor's bytes at data_offset + offset
//
// A string is a u64 length and that many bytes. A value is a scalar of one of
// the 12 GGUF types or an array {elem_type u32 | n u64 | n scalars}; arrays of
// arrays are rejected. Version 1 (u32 counts) and big-endian files are
// rejected with their own messages.
//
// # Checks (the same as ggml's gguf.cpp, plus bounds)
//
//   - Every count and length is checked against the bytes left in the file
//     before anything is allocated: a claim within the file's size (plus
//     1 MiB) that runs past its end is ErrTruncated, a larger one is
//     corruption (ErrBadMetadata / ErrBadTensor). Hard caps far above any
//     real model bound the rest: 2^24 array elements, 2^26-byte strings,
//     2^20 keys, 2^20 tensors. So a damaged count never makes the parser
//     allocate more than a few hundred MB, whatever the file's size.
//   - Keys and tensor names are unique; tensor names are at most 63 bytes;
//     at most 4 dimensions, each < 2^63, with a product that fits in int64;
//     the type is a valid ggml type and the row length a multiple of its
//     block size; general.alignment, if present, is a uint32 power of two.
//   - Tensor data offsets follow gguf.cpp's rule: each tensor starts exactly
//     where the previous one's data, padded to the alignment, ends. Every
//     tensor's [Offset, Offset+Size) lies inside the file (else ErrTruncated,
//     naming the tensor): a cut download is detected without reading data.
//
// # API (stable: engine/ggml and app depend on it)
//
//	Open(path) / Read(r io.ReaderAt, size) → *File{Version, KV, Tensors,
//	    Alignment, DataOffset, Size}; TensorInfo.Offset is absolute.
//	File.String/Int/Float/Bool/Strings/Ints/Floats(key): typed metadata
//	    accessors (integers of any width; ok=false when missing or mistyped).
//	File.Shape() → ModelShape: llama.cpp's hyper-parameters with its
//	    defaults (head_count_kv = head_count, key_length = embd/heads,
//	    rope.dimension_count = key_length, rope.freq_base = 10000, ...).
//	File.CheckTensors(shape): the architecture is supported (llama — also
//	    Mistral —, qwen2, qwen3, gemma2, gemma3 (post-norms; gemma2's head
//	    always token_embd), phi3 (fused attn_qkv and ffn_up, LongRoPE
//	    factors), and qwen3moe and gpt-oss (biases, sinks, expert biases)
//	    with their routed experts; an expert_count on any other
//	    architecture is unsupported) and every
//	    tensor llama.cpp's loader requires is there with its shape (expert
//	    weights 3-D, one matrix per expert), with no tensor it would not use.
//	Part.ExpertBytes: the routed experts' share of a layer's bytes, of which
//	    a token reads NExpertUsed/NExpert.
//	File.CheckVocab(): the tokenizer arrays have the types and lengths
//	    llama.cpp's vocabulary loader indexes without checking (else a C
//	    abort or an out-of-bounds read), no duplicate tokens, and as many
//	    tokens as token_embd has rows.
//	File.Check(): Shape + CheckTensors + CheckVocab, the one call the engine
//	    makes after Open and before any cgo call.
//	File.Holding(nLayer) → Holding{Slice, Layers, Input, Output}: what a
//	    weight slice (engine/slice: homering.slice.version 1, .layers as
//	    [start0, end0, …] half-open, sorted, disjoint, .input, .output) says
//	    it holds, checked; a file without those keys holds everything.
//	File.CheckSliceTensors(shape, holding): CheckTensors restricted to the
//	    held parts: each held part's tensors are all there, no tensor of a
//	    part not held is, and a held output of a tied model has token_embd.
//	    (Check still wants a whole model.)
//	File.Layout() → bytes, bytes by type and merged file byte ranges per
//	    layer ("blk.N.*"), for the input (token_embd), the output
//	    (output_norm, output) and the rest (rope_freqs); for planning and
//	    prefetching; Layout.WindowRanges(a, b, input, output) merges the
//	    ranges a window [a,b) reads. ModelShape.KVBytesPerToken gives the KV
//	    cache cost.
//	Type: ggml_type numbers with ggml's block and type sizes for every type
//	    (K-quants, IQ types, TQ, MXFP4).
//
// # Errors
//
// Every error is a *FormatError whose Kind is one of ErrNotFound,
// ErrNotRegular, ErrNotGGUF, ErrTruncated, ErrBadVersion, ErrBadMetadata,
// ErrBadTensor, ErrUnsupported, ErrIO (errors.Is works), with Offset where known. Its
// Error() names the file, says what is wrong and what to do, e.g.
// "m.gguf is incomplete: it ends at 812 MB but tensor blk.30.ffn_down.weight
// needs 3.9 GB. Download it again."
package gguf
