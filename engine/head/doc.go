// Package head is generation on the head device: tokenize, evaluate, sample,
// detokenize, stream tokens. Run is the one generation loop, of a single
// device and of a ring of devices alike (a single device is a ring of one
// window): it evaluates tokens on a Model, which is either a Head (the
// whole model as one engine/ggml window [0, L) with the token embedding and
// the output head on this machine) or engine/ring/job's head job (the
// windows of a ring, the head's first, whose passes go round the devices;
// its output window on the head gives the logits). What the loop owns
// exists nowhere else: the prompt, the seeded sampler, the context limits,
// the UTF-8 hold-back, cancellation between evaluations and the stats. What
// the Model owns is how tokens are evaluated: which the caches keep from
// the last request, how passes are cut, and, on a ring, re-plans and
// re-prefills after a device is lost (a Model answers Eval once the logits
// are there, however many passes that took).
//
// Why the loop over a Model and not the reverse (the ring's driver events
// as the loop's shape, a single device as a ring of one driver): the
// single-device path is the one every chat without peers takes, and a
// driver, its goroutines and a channel hop per token would cost it time
// for nothing; an interface call per evaluation costs it nothing.
//
// A Head owns a ggml.Model, one Window with Embed+Output, the model's
// llama.cpp vocabulary (engine/llama) and the tokens whose KV entries the
// window holds. Run (Generate on a Head):
//
//  1. builds the prompt: Messages are formatted with the model's chat
//     template (ChatML when the GGUF has none) and opened for the assistant;
//     otherwise Prompt is used as is. The text is tokenized as llama-cli does
//     (BOS where the model adds it, special-token text parsed);
//  2. asks the Model to keep what its caches share with the prompt (a Head
//     keeps the longest common prefix, so a follow-up turn only evaluates
//     what is new, and evaluates the rest in chunks of 512 tokens:
//     llama.cpp's micro-batch, so the logits stay llama.cpp's bits);
//  3. samples with engine/sample (seeded from Request.Seed; the prompt tokens
//     are fed to the repeat penalty first; greedy is the sampler's argmax,
//     lowest id on ties), evaluates each new token, and emits one Token per
//     sampled token until an end-of-generation token, MaxTokens, the end of
//     the context, ctx's cancellation or an emit error. A request's
//     Constraint (structured output: engine/llama's Grammar) refuses the
//     tokens its grammar does not allow next, the end of generation until
//     the grammar is complete; the sampled token is checked first and the
//     logits masked only when it is refused, as llama.cpp's sampler does.
//
// Speculative decoding (Request.Draft): a small model of the same
// vocabulary (PickDraft finds one among model files; a Head is one)
// proposes up to DraftTokens tokens greedily after each sampled token; the
// Model, a Verifier, evaluates the token and its drafts in one pass with
// the logits of every row (a Head's window, or a ring's one pass of one
// batch through every device), and the loop samples from those rows for as
// long as each sampled token is the draft the next row was computed after.
// At the first that is not, the target's and the draft's caches forget the
// rejected drafts (Truncate; a ring's devices when the next pass starts
// there) and the sampled token is evaluated with new drafts. Every token is
// still sampled from the target's logits after the same tokens, and a
// verification's rows attend row by row (engine/ggml's SetRowAttention),
// so that each is the bits of a one-row pass: greedy replies are the
// unspeculated ones exactly. Only greedy requests speculate; sampling at a
// temperature would need Leviathan et al.'s rejection sampling to keep its
// distribution and would draw the seeded random numbers differently. Stats
// count the drafted and accepted tokens.
//
// Token text is UTF-8-safe: bytes of a character split across tokens are held
// back until the character is complete, and the last Token flushes whatever
// is left. An end-of-generation token is emitted with EOG set and no text of
// its own.
//
// A Head is not safe for concurrent use: one Generate (or Run on it) at a
// time.
package head
