// Package sample picks the next token from a model's logits. It is pure Go:
// no I/O, no goroutines, no clock, no global random source (the caller passes
// a seeded *rand.Rand, so a seed reproduces a generation exactly).
//
// Model. A Sampler holds its Params, the random source and the tokens accepted
// so far (only the last RepeatLastN matter). Sample(logits) never changes the
// logits it is given. The stages run in llama.cpp's default order
// (common/sampling.cpp):
//
//  1. repeat penalty: every distinct token among the last RepeatLastN accepted
//     tokens has its logit divided by RepeatPenalty if positive, multiplied by
//     it otherwise;
//  2. Temperature <= 0 is greedy: the highest logit wins, the lowest token id
//     on ties (as llama_sampler_greedy does); the stages below do not run;
//  3. top-k: keep the TopK highest logits (0 = all);
//  4. top-p: keep the shortest prefix, by falling probability, whose
//     probability sum reaches TopP (>= 1 = all);
//  5. min-p: keep tokens whose probability is at least MinP times the most
//     likely one's (0 = all);
//  6. temperature: divide the logits by Temperature;
//  7. draw one token from the softmax of what is left.
//
// Stages 3-5 see probabilities at temperature 1, as in llama.cpp; each always
// keeps at least one token. Ties in ranking are broken by the lower token id,
// so a seed gives the same token on every platform.
//
// Invariants: with TopK = 1, or TopP tiny, the result equals greedy; a token
// outside [0, len(logits)) is never returned; NaN logits count as -Inf.
package sample
