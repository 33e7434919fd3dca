// Command enginebench measures prefill and decode speed of Homering's window
// engine (engine/ggml, one window [0, L) with embedding and output head)
// against llama.cpp (engine/llama's Reference) on the same model, in the same
// process, built with the same compiler flags. bench/engine.sh drives it.
//
// For each model and thread count it loads both engines, warms them (one
// untimed run each, which also pages the weights in), then for every
// repetition and in alternating order runs, in each engine: clear the KV
// cache, evaluate a prompt of -prefill tokens as one batch (only the last
// token's logits, as a prefill does), then -decode single-token steps. It
// prints the median tokens/s of each phase and the ratio ours/llama.cpp.
// Both engines are fed the same tokens: the prompt is a fixed text tokenized
// by the model, the decode tokens are llama.cpp's greedy choices.
package main
