package ring

import (
	"time"

	"homering/engine/ring/wire"
)

// The head's pass policies: how many rows a prefill pass carries, where each
// pass of a (re-)prefill ends, how big a job's KV caches are, and where a
// request resumes on a kept job. Pure functions of their arguments; the
// head's ring job calls them (engine/ring/job).

// PassBudget is the share of a device's memory (its cgroup limit, else its
// RAM) that ggml's compute buffers of one prefill pass may take on it: they
// grow to the largest pass evaluated and stay until the job ends, ~90 KB per
// row for a 2048-wide model (46 MB for 512 rows on one window), and memory
// pressure counts them. The head judges by its own memory.
const PassBudget = 0.02

// Shape is what the pass size depends on of a model.
type Shape struct {
	NEmbd, NFF, NHead int
}

// PassRows is the most rows a prefill pass carries on a ring of a model of
// shape s with a context of nCtx on a device with memory limit bytes:
// maxRows (the engine's batch), or fewer (a power of two, at least 32) when
// the compute buffers of maxRows rows would take more than PassBudget of
// it. A row's buffers are estimated from the shape: the feed-forward's three
// F32 rows of NFF, the attention scores of every head over the context, a
// hidden state (108 KB for the model that measured 90 KB). limit 0: unknown.
func PassRows(maxRows int, s Shape, nCtx int, limit int64) int {
	perRow := 4 * int64(3*s.NFF+s.NHead*((nCtx+255)/256*256)+s.NEmbd)
	if limit <= 0 || perRow <= 0 {
		return maxRows
	}
	rows := maxRows
	for rows > 32 && float64(int64(rows)*perRow) > PassBudget*float64(limit) {
		rows /= 2
	}
	return rows
}

// MinMicroRows is the smallest micro-batch of a pipelined prefill: the
// prompt kernels lose little below a full pass down to 32 rows and much
// below (one device, 1 thread, the quick ring bench model, 64 rows over 10
// layers: 174-199 ms in one batch, 213 in batches of 32, 257 of 16, 299 of
// 8), so smaller micro-batches would cost more compute than the overlap
// gains.
const MinMicroRows = 32

// MicroRows is the micro-batch of the pipelined prefill passes of rows on
// a ring of devices (prima.cpp, appendix A.11; StartToken.Batch): about
// two per device in a pass, so that every device has the next one waiting
// while it computes one, rounded down to a power of two and at least
// MinMicroRows. It depends on neither the prompt nor the position, so a
// kept job's later turns cut their prompts as its first did (KeptPrefix).
// A ring that releases its windows' pages after each round (release with
// k > 1) is not pipelined: every micro-batch would read the weights again.
// rows itself means one batch per pass.
func MicroRows(rows, devices int, release bool) int {
	if devices < 2 || release {
		return rows
	}
	b := MinMicroRows
	for 2*b <= rows/(2*devices) {
		b *= 2
	}
	return min(b, rows)
}

// PlanMicroRows is MicroRows on plan p: over its devices, releasing when
// any of them releases its windows' pages after each of k > 1 rounds (with
// k = 1 a window is computed once per pass, so its pages are read once
// whatever the micro-batches).
func PlanMicroRows(rows int, p *wire.Plan) int {
	release := false
	for _, d := range p.Devices {
		release = release || d.Release && p.K > 1
	}
	return MicroRows(rows, len(p.Devices), release)
}

// ExactReprefill is the most generated tokens a re-prefill after a re-plan
// evaluates one per pass, as they were decoded, and ExactReprefillTime the
// most time that may take (at the measured time per token): batched passes
// round differently from one-token ones, and the near-tie logits of a
// random-weight model can then pick another token than the unfaulted run.
// Beyond either bound they go in batches like the prompt: a long reply
// resumes sooner, and a trained model's logits are rarely that close.
const (
	ExactReprefill     = 64
	ExactReprefillTime = 10 * time.Second
)

// PassEnd is where the forward pass that starts at position pos of a
// conversation of total tokens (the first nPrompt the prompt) ends. The
// prompt goes in passes of at most rows, its last one ending at the
// prompt's end, as the first prefill did; the tokens generated after it go
// one per pass, as they were decoded, when a re-prefill has at most
// ExactReprefill of them and they take at most ExactReprefillTime at
// msPerToken (0: not measured yet), else in passes like the prompt's. So a
// re-prefill computes what the unfaulted run computed, bit for bit.
func PassEnd(pos, nPrompt, total, rows int, msPerToken float64) int {
	if pos < nPrompt {
		return min(pos+rows, nPrompt)
	}
	gen := total - nPrompt
	if gen <= ExactReprefill && float64(gen)*msPerToken <= float64(ExactReprefillTime.Milliseconds()) {
		return pos + 1
	}
	return min(pos+rows, total)
}

// JobContext is the KV cache size of a ring job. A job that ends with its
// request need hold only this request (prompt and reply, also after a
// re-prefill), rounded up to 32 positions (the windows' KV granularity)
// and never more than the context: KV that a 60-token chat never touches is
// anonymous memory memory pressure counts on every device (a 27-layer
// window of the bench model: 14 MB at 256 cells, 3.5 MB at 64). maxTokens
// 0: the whole context.
func JobContext(nCtx, prompt, maxTokens int) int {
	if maxTokens <= 0 {
		return nCtx
	}
	need := prompt + maxTokens + 1
	return min(nCtx, (need+31)/32*32)
}

// KeepRoom is the room a kept job's KV caches leave beyond the next turn's
// reply for the next message (a person's message is rarely longer): 128
// positions are 7 MB on a 27-layer window of the bench model.
const KeepRoom = 128

// KeptContext is the KV cache size of a job that may be kept: what this
// request needs (prompt + maxTokens + 1) and then room for the next turn
// (its message, KeepRoom, and a reply as long), or twice what this request
// needs when that is more, so that a long conversation grows its cache
// geometrically (each fresh job on it sizes for twice again); rounded up to
// 32 positions, never more than the context.
func KeptContext(nCtx, prompt, maxTokens int) int {
	if maxTokens <= 0 {
		return nCtx
	}
	need := prompt + maxTokens + 1
	size := max(2*need, need+KeepRoom+maxTokens+1)
	return min(nCtx, (size+31)/32*32)
}

// CommonPrefix is how many leading tokens a and b share: how much of a KV
// cache holding a another request with b can keep.
func CommonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// KeptPrefix is where a request with prompt toks resumes on a kept job
// whose caches hold kv, the first exact of them computed in full passes of
// keptRows from position 0: the end of the last such pass whose tokens the
// prompt shares, when this request's passes (rows) are as big, but never
// the whole prompt (its last pass gives the logits).
func KeptPrefix(kv, toks []int32, exact, keptRows, rows int) int {
	if rows <= 0 || rows != keptRows {
		return 0
	}
	keep := min(CommonPrefix(kv, toks), exact) / rows * rows
	if keep >= len(toks) {
		keep -= rows
	}
	return max(keep, 0)
}
