// Command ringbench is bench/ring.sh's helper: it generates on one device
// with llama.cpp or Homering's engine and times it, runs a case while
// sampling the memory of every device's cgroup, and prints the table.
//
//	ringbench llama  -m FILE -n N -threads T -ctx C   llama.cpp (engine/llama's Reference)
//	ringbench engine -m FILE -n N -threads T -ctx C   Homering's engine (engine/head, what `homering run` runs)
//	ringbench measure -case NAME -out FILE -cgroups d1=DIR,... [-parse json|chat] -- COMMAND...
//	ringbench na -case NAME -why TEXT -out FILE       a row that could not be measured
//	ringbench evict FILE...                           drop the files' clean pages from the page cache
//	ringbench table -baseline NAME [-baseline NAME2] [-target NAME] FILE
//	                                                  the table and ratios to the baseline (the
//	                                                  median of its runs when several are named)
//
// llama and engine print one JSON line {"ttft_ms","tpot_ms","tokens",
// "load_ms"} after a warm-up generation (a different prompt, 2 tokens):
// TTFT is the time from the request to the first sampled token (prompt
// evaluation included), TPOT the median time between the following tokens,
// greedy sampling.
//
// measure runs COMMAND, samples each cgroup every 20 ms and appends one
// JSON line to FILE with COMMAND's TTFT and TPOT (parse json: the last
// stdout line that is a JSON object with ttft_ms and tpot_ms; parse chat:
// `homering chat --json` output, see parseChat) and per device:
//
//   - pressure: the peak of the device's non-reclaimable memory (cgroup
//     usage minus its file pages, i.e. what sysinfo counts as not available
//     inside the cap) minus its value before the case, over the cap. This is
//     ΔMemAvailable/MemTotal with the capped cgroup as the device.
//   - usage: the peak of usage (page cache included) over the cap, to show
//     the cap was binding.
//   - OOM kills in the cgroup during the case.
//   - peak parts: at the peak of non-reclaimable memory, the cgroup's
//     anonymous, shared and kernel memory (memory.stat, memory.kmem on v1)
//     and each of its processes' RssAnon, named by command line: what the
//     pressure is made of.
//
// Linux only (memory cgroups and network namespaces): its files carry a
// linux build tag, so on other systems the package is this doc alone.
package main
