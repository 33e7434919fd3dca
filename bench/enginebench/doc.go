// Command enginebench measures prefill and decode speed of Homering's window
// engine (engine/ggml, one window [0, L) with embedding and output head)
// against llama.cpp (engine/llama's Reference) on the same model, in the same
// process, built with the same compiler flags. bench/engine.sh drives it.
//
// For each model and thread count it loads both engines, warms them (one
// untimed run each, which also pages the weights in), then for every
// repetition clears both KV caches, evaluates a prompt of -prefill tokens as
// one batch in each engine (only the last token's logits, as a prefill does),
// then -decode single-token steps, each step in one engine right after the
// other; which engine goes first alternates by repetition. It prints the
// median tokens/s of each phase and engine, and as the ratio ours/llama.cpp
// the median over repetitions of each back-to-back pair's ratio: on a shared
// machine whose load swings within a minute, a ratio of two medians taken
// minutes apart measures the load more than the engines (it read 0.87-0.90
// for prefill while identical graphs ran identical kernels).
// Both engines are fed the same tokens: the prompt is a fixed text tokenized
// by the model, the decode tokens are llama.cpp's greedy choices.
// With -kernels, ours runs once per variant of our matrix kernels; -readbw
// (on by default) first measures the machine's read bandwidth at 1 and 2
// threads (readBandwidth), and each decode row sets its bytes per second
// (ggml.Window.StepBytes times tokens/s) against it.
//
// Fairness of running both in one process: neither engine may leave a thread
// busy when the other starts. llama.cpp (as ollama runs it, no attached
// thread pool) creates and joins its worker threads inside each graph
// compute; engine/ggml's persistent pool sleeps between evaluations. Before
// that pool stopped spinning (ggml's default poll level 50, ~50 ms of a core
// after every evaluation), llama.cpp's 2-thread decode steps ran beside our
// spinning worker and this benchmark read 1.4-1.7 for 2-thread decode.
package main
