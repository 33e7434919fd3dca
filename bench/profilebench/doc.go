// Command profilebench is bench/profile.sh's helper: it measures decode
// time per token of a whole model in one window of Homering's engine
// (engine/ggml), turns measured samples into a calibrated device profile
// (engine/profile/calib) and evicts a model from the page cache. The
// predictions come from the real `homering profile` and `homering plan`.
//
//	profilebench decode -model M -threads T -tokens N   → JSON {"ms": [...], "median_ms": x}
//	profilebench calibrate -device d.json -plan p.json -samples s.json → calibrated device JSON
//	profilebench run -model M -threads T -reps R ...     → one JSON row (see run.go)
//	profilebench table < rows                            → the table
//	profilebench evict -model M                         → drop M's pages (posix_fadvise DONTNEED)
//
// Linux only (posix_fadvise and the page cache): its files carry a linux
// build tag, so on other systems the package is this doc alone.
package main
