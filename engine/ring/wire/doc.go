// Package wire is the ring protocol's message codec: the payloads that travel
// inside engine/ring/transport frames between the devices of a ring. It is
// pure (stdlib only, no I/O): Encode turns a message into a frame type and
// payload, Decode turns a type and payload back into a message or a typed
// error, and never panics on any input (FuzzDecode).
//
// # Layers
//
// engine/ring/transport owns the connection: mutual TLS, websocket, the
// length-prefixed frame (uint32 length, uint8 type, payload) with its size
// limit checked before the payload is allocated, and the Hello that carries
// the protocol range and the app version. wire does not repeat any of that:
// the runner puts ProtoMin/ProtoMax below into transport.Hello, and wire
// defines only frame types ≥ 64, the range transport reserves for it.
//
// # Messages (type numbers are wire constants, appended only, never reused)
//
// All integers are big endian. A string is uint8 length + UTF-8 bytes
// (device IDs, tensor names: ≤ 255 bytes). A range is start uint32, end
// uint32, half-open [start, end).
//
//	64 PlanInstall  plan uint64, k uint16, layers uint32, nEmbd uint32,
//	                dtype uint8, nDev uint8, then per device in ring order
//	                (head first): id string, flags uint8 (bit 0: release a
//	                window after use), gpu uint32 (protocol 2: the first gpu
//	                layers of each of its windows run on its GPU; at most
//	                its shortest window), then k ranges (its window per
//	                round)
//	65 PlanAck      plan uint64, code uint16, text (uint16 length + bytes)
//	66 Commit       plan uint64: every device acknowledged; serve it
//	67 Activation   plan uint64, seq uint64, round uint16, layers range
//	                (the layers the sender has just run), pos uint32 (the
//	                position of row 0), rows uint32, nEmbd uint32, dtype
//	                uint8, then rows × nEmbd values of dtype, little endian
//	                (the byte order of every machine ggml runs on); dtype 1
//	                F32, 2 F16 (IEEE binary16, rounded to nearest even,
//	                saturating at ±65504: F16Data), the plan's for every hop;
//	                the dtype byte's bit 7 set: the rows are a speculative
//	                verification (Activation.Verify), attended row by row;
//	                bits 4-6: the stream (Activation.Stream, 0-7), the
//	                conversation whose KV the rows extend on every device
//	68 Token        plan uint64, seq uint64, token int32
//	69 Goodbye      code uint16, text: the job ends (head gone, quitting)
//	70 SliceRequest model [32]byte, name string, offset uint64, length uint32
//	71 SliceChunk   model [32]byte, name string, offset uint64, total uint64,
//	                data (uint32 length + bytes)
//	72 SliceList    model [32]byte, fileSize uint64, nTensors uint16, per
//	                tensor: name string, size uint64, sha256 [32]byte
//	73 JobStart     job uint64, model [32]byte, nCtx uint32, flags uint8
//	                (bit 0: no prefetch; bit 1: idle, the head holds the job
//	                between requests and the worker may end it), tickMs
//	                uint32 (1-60000: the head's tick, which the worker
//	                adopts), nPeers uint8, per peer: id string, addr string
//	                (host:port of its runner): the head's first frame on its
//	                link to a worker, sent again when the peers change and
//	                when the job goes idle or back to work
//	74 JobAck       job uint64, code uint16, text: the worker's answer
//	75 JobLink      job uint64: first frame of the link a worker dials to
//	                its successor in the ring (for activations)
//	76 DeviceStats  plan uint64, tokens uint32, computeUS uint64 (over those
//	                decode tokens), pressure uint16 (1/10000, ≤ 10000),
//	                fetched uint64, sliceBytes uint64, promptUS uint64
//	                (over the prefill computes), prompts uint32 (those
//	                computes), promptRows uint32 (their rows, first round),
//	                vramUsed uint64, vramFree uint64 (0 without GPU
//	                layers): worker → head
//
// Job messages (73-76) never reach the ring session: the runner sets up a
// job with them and the driver keeps DeviceStats for the head's report.
//
// Slice names "@header" (the source's bytes [0, data offset): metadata and
// tensor table) and "@list" (answered with a SliceList) are reserved.
//
// seq numbers the forward passes of one plan: the prefill batch is one seq,
// each generated token the next. (seq, round) orders every activation of a
// plan, so a receiver drops what it has already seen.
//
// # Limits and checks
//
// Every count and length is checked against the bytes that remain before
// anything is allocated, and against the limits below; an activation's
// rows × nEmbd × size(dtype) is computed without overflow and must equal the
// bytes present. Decode checks a message on its own; (*Plan).CheckActivation
// checks an activation against the installed plan (plan id, nEmbd, dtype,
// layer range), which a receiver must do before computing on it. Activation
// data and slice chunk data alias the payload: Decode copies nothing large.
package wire
