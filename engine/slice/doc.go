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
// the head's SHA-256 (ErrHashMismatch). Verified tensors are made durable in
// batches: after every 64 MiB of them (and when a build stops early: an
// error, a cancel) the part file is synced, then their names are appended to
// PATH.part.done and that is synced, so the log never names data that is not
// on disk, and an interrupted build resumes with the tensors still missing
// (re-verifying those it keeps). When all are there the part file is synced
// and renamed to PATH and the directory synced: a slice file in use is
// always complete. A later Build of the same source and layers finds PATH,
// checks its header and reuses it (warm restart) without fetching anything.
//
// # A cache of several slices per model
//
// A worker's cache (Cache) holds complete slices of the models it serves,
// several per model once re-plans have moved its windows, and never copies
// layers from one slice file into another. When its windows change, Cover
// splits the layers it needs into pieces, each held by one cached slice
// (the slice holding the longest run from each layer: the fewest pieces),
// and the runs no slice holds, which are fetched from the head into one new
// slice of exactly those layers. The worker maps every file it uses
// (several mappings of one model: page cache, no anonymous copies) and runs
// each window as consecutive sub-windows, one per piece, each with its own
// KV cache; chained in one process they compute the same bits as the whole
// window (engine/ggml). A survivor whose new windows are all cached fetches
// nothing and only opens files.
//
// Pruning: after preparing a job the worker calls Prune with the files it
// maps. It removes the least recently used entries (a slice file, or a part
// file of an interrupted build with its done log) until the cache holds at
// most Budget(job's slice bytes, configured cap) = max(2 × job, cap; cap 0
// is DefaultCap, 1 GiB) and the disk has at least MinFree (1 GiB) free. It
// never removes a file in use nor a part file written in the last two
// minutes (a build may be running); "used" is the file's modification time,
// which Touch sets whenever a job maps a slice. A full disk while building
// prunes everything not in use and tries once more.
//
// # Over the ring's links
//
// The head's Server answers wire.SliceRequest frames on a connection of
// their own (transport.PurposeSlice), so megabytes of weights never queue
// in front of activations: "@list" gives every tensor's size and SHA-256
// (hashed once, on first request), "@header" the source's header bytes
// (whose SHA-256 is the model's identity), a tensor name its bytes in
// chunks of at most ServeChunk (1 MiB; a request may ask for up to
// MaxChunk, ConnSource asks again for the rest): a chunk is in memory three
// times while it goes, and the server hands the freed heap back to the OS
// every 32 MiB it sends. ConnSource (worker) is the matching Source;
// FetchIndex gets the header and hashes a Spec needs. It keeps up to four
// chunk requests in flight (a goroutine sends them, the reader takes the
// answers in order), so a worker pays a round trip per four chunks, not
// per chunk.
package slice
