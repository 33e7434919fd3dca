// Package slice builds a worker's weight slice: a valid GGUF file holding
// only the tensors of the layers the worker runs (its windows of every
// round), fetched from the head tensor by tensor, verified by hash, and
// stored in the worker's cache so that engine/ggml can mmap it.
//
// # File
//
// A slice keeps the source's names and numbering: blk.N.* stays blk.N.*,
// and every metadata key of the source is copied unchanged (block_count
// included), so layer numbers, windows and byte ranges mean the same thing
// on the head and on the worker and the ring needs no translation. It adds:
//
//	homering.slice.version  uint32  1
//	homering.slice.source   string  hex SHA-256 identity of the source model
//	homering.slice.layers   [int32] start0, end0, start1, end1, …: half-open
//	                                layer ranges held (sorted, disjoint)
//	homering.slice.input    bool    token_embd.* held
//	homering.slice.output   bool    output_norm.*, output.* held
//
// Tensors are those of the held layers, plus token_embd (input), output_norm
// and output (output), plus rope_freqs when the source has it (tiny, and
// every layer reads it), in the source's order, aligned as the source.
// A slice with every layer, input and output is the whole model re-laid out.
// engine/ggml.Open honours the homering.slice.* keys: it checks that the file
// holds what it claims and refuses windows outside it (ggml.ErrNotHeld).
//
// # Durability
//
// Build writes PATH.part: header first, then the whole size reserved with
// fallocate (a full disk fails here, before any download, with ErrNoSpace),
// then each tensor at its final offset, hashed on the way and compared with
// the head's SHA-256 (ErrHashMismatch). Each verified tensor's name is
// appended to PATH.part.done and synced, so an interrupted build resumes
// with the tensors still missing (re-verifying those it keeps). When all are
// there the part file is synced and renamed to PATH and the directory
// synced: a slice file in use is always complete. A later Build of the same
// source and layers finds PATH, checks its header and reuses it (warm
// restart) without fetching anything.
//
// # Overlapping slices
//
// Local is a Source over the complete slices of the same model already in
// the cache directory, with the head as the fallback: when a re-plan
// changes a worker's windows, the layers it already held are copied from
// disk and only the others travel. Tensors keep their names and bytes in
// every slice, and Build checks each one's hash whichever source gave it.
package slice
