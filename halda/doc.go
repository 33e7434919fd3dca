// Package halda is Homering's layer-to-device scheduler: the Halda algorithm
// of prima.cpp (000/001 §3.2-3.3 and appendix A.3; the equations are worked
// out in ../shared/notes/papers-digest.md §1.1.2-1.1.5). Profiles in, plan
// out:
//
//	plan, err := halda.Solve(problem, lpsolve.Solver{})
//
// It is a pure function: no I/O, no goroutines, no clock, no randomness, and
// only the standard library and the device-ID value (discovery/deviceid, a
// leaf: a device the agent plans with carries its ID into the plan). The ILP solver comes in through the Solver
// interface (halda/lpsolve wraps lp_solve); nothing here imports it.
//
// # Model
//
// M devices d_1 (the head, Problem.Devices[0]) … d_M form a ring. A token
// makes k rounds; in each round device m runs a window of w_m consecutive
// layers, the first n_m of them on its GPU. W = Σ w_m = L/k, so device m runs
// l_m = k·w_m layers per token, l_m^gpu = k·n_m on the GPU. Round r gives
// device m layers [r·W + Σ_{j<m} w_j, … + w_m).
//
// The predicted time per token is the paper's worst-case sum (eq. 11, no
// overlap between devices): T = Σ_m T_m^comp + T_m^mem + T_m^disk + T_m^comm.
// Per layer, with b' = b + 2(h_k e_k + h_v e_v)·n_kv (weights plus KV cache):
//
//	α_m = Σ_q f^q/s_m^{cpu,q} + t_m^{kv,cpu} + b'/𝒯_m^cpu               CPU layer
//	β_m = Σ_q f^q/s_m^{gpu,q} − Σ_q f^q/s_m^{cpu,q} + t^{kv,gpu} − t^{kv,cpu}
//	      + b'/𝒯_m^gpu − b'/𝒯_m^cpu                                     GPU minus CPU
//	ξ_m = (t^{ram→vram} + t^{vram→ram})(1 − 𝕀_UMA) + t_m^comm           per window
//	κ   = head's output layer (compute and read) + one embedding row from disk
//	      + Σ_{paging m} (b_m^cio − d_m)/s_m^disk
//
// where b_m^cio = c^cpu + 𝕀_head(b_i/V + b_o) (eq. 33). Each device is in one
// memory case, which decides its disk term and its memory rows:
//
//	M1 macOS, no Metal, RAM short:   a = α + b'/s (random reads), rows l·b' + cio > d
//	M2 macOS, Metal, memory short:   a = α + b/s, b = β (all weights re-read, eq. 16)
//	M3 Linux/Android, RAM short:     a = α + b'/s (sequential), b = β − b'/s, (l−g)·b' + cio > d (+swap-out)
//	M5 Windows, RAM short:           as M3 with random-read throughput (below)
//	M4 memory enough or disk slower than s_threshold: a = α, b = β, memory rows "fits"
//
// s is s_m^disk: the measured page-fault throughput when the device has one
// (it overrides the sequential/random choice above; see "Decisions").
//
// For fixed k and cases, T = k·Σ(a_m w_m + b_m n_m) + constant is linear, and
// every memory row of eqs. 27-35 is a bound on w, n or w − n: a LayerILP
// (solver.go). The VRAM rows are n·k·b' ≤ d_cuda − c^gpu (CUDA) and
// n·k·b' ≤ d_metal − c^gpu − 𝕀_head b_o (Metal).
//
// # Algorithm
//
// Solve enumerates k over the divisors of L whose window has room for every
// device, solves one ILP per k, and searches the case assignment as
// Algorithm 1 does: start from windows proportional to memory budgets (line
// 1), re-assign cases from the best plan (line 6) until they repeat, with
// the GPU-headroom step (lines 13-15: a GPU with free VRAM while a device
// pages forces the slowest-disk pager into M4). The loop is capped at
// Problem.MaxIterations (default 2M+4) and the best feasible plan seen is
// kept (the papers' convergence claim is not a proof). Homering adds, all
// keeping the best plan seen:
//   - more starting assignments: all devices fitting, all fast-disk devices
//     paging, and the cases of the MemSched and PerfSched splits at their
//     best k — so Halda's ILPs contain the baselines' points and Halda is
//     never worse than either;
//   - a repair step: a device whose own rows admit no point under its case
//     for any k is flipped to a case that does (one such device would make
//     every ILP infeasible and freeze the loop);
//   - forcing pagers into M4 one at a time, largest disk time first, while
//     that improves the plan (the headroom step without its VRAM condition:
//     the loop alone cannot leave, e.g., a Metal head re-reading everything);
//   - flipping pagers between their two paging variants (M3 and M3t, M1
//     and M1t, M5 and M5t: window resident or not) one at a time, largest
//     disk time first, while that improves the plan: line 6 gives a pager
//     the variant its window implies, so a thrashing device is never tried
//     with a window small enough to stay resident. On the 800 random
//     problems of the enumeration tests this found a better optimum for 35
//     (up to 85% faster; one 257 → 87 ms with the head paging one resident
//     layer instead of thrashing on two).
//
// Each ILP is skipped when a lower bound on its optimum (every device's
// floor of layers at its cheaper per-layer cost, the rest at the cheapest)
// cannot beat the best plan so far: such an ILP could not have become the
// best, and a case assignment whose every k is skipped ends its run. A subset tried by device selection
// starts from the cases its devices had in the larger plan, plus the
// paper's start.
//
// Device selection (001 §3.3): a non-head device holding one layer (w = 1,
// CPU or GPU: either costs a hop per round) is dropped when the plan without
// it is faster: all such devices together first, then the costlier half of
// them, a quarter, … (each alone when there are at most three), taking the
// first improvement and repeating. Then the head alone is tried: a small
// model may run fastest with no hop at all ("reducing prima.cpp to
// llama.cpp"), which the one-layer rule misses when the head held none.
// Devices that cannot hold even one layer (KV cache and buffers exceed their
// memory, or a too-slow disk and no room) are left out before solving, and
// with more devices than layers the slowest are left out. Every left-out
// device is listed in Plan.Dropped with a reason.
//
// Ring order: each device sends one hidden state per window, so a token
// costs k × (the ring's cycle time) in links whatever w is; the order is the
// shortest directed cycle through the devices, the head first. All orders
// for up to 7 devices; beyond, nearest neighbour from the head, then 2-opt.
// The link times are charged in the objective (ξ), so they also drive device
// selection: a device that adds more link time than it saves is dropped, as
// in 001 A.19.2.
//
// # Mixture of experts
//
// The papers model dense layers: a token reads all b bytes of every layer.
// A mixture-of-experts layer (qwen3moe, gpt-oss) routes each token to k of
// its n experts, so a token reads r = a + (k/n)·e of a layer of b = a + e
// bytes (a: attention, router, shared experts and norms, read by every
// token; e: the routed experts). With weights in the page cache, what a
// device pages per token is what its tokens miss, not its layers' size.
// Model.LayerReadBytes, LayerHotBytes and ColdReadRate carry this (all zero
// for a dense model, which keeps the paper's terms exactly):
//
//   - Compute and memory access (α, β) charge r' = r + KV per layer, not b'.
//     FLOPs are Model.LayerFlops, which the model profile already counts per
//     token (k/n of the experts').
//   - The hot set h is the always-read part plus the experts routed more
//     often than uniformly (k/n); ρ is the mean per-token read rate of the
//     rest (the cold experts). With routing uniform, h = a and ρ = k/n.
//   - Paging (M1, M3, M5): while the device's hot set stays resident, the
//     overflow beyond memory is cold experts, and a token re-reads each
//     cold byte with probability ρ: disk = ρ·((l−g)·b' + b^cio − d)/s
//     instead of eq. 15's whole overflow.
//   - The hot row, when the hot set stays. Linux keeps file pages on an
//     active and an inactive list: a page enters inactive and is promoted
//     when used again before it leaves; the inactive list is 1/(1+ratio)
//     of the pages, ratio = ⌊√(10·GiB)⌋, 1 under 1 GiB (mm/vmscan.c,
//     inactive_is_low; other systems: half). So the hot sets of all the
//     device's CPU layers must fit, k(w−n)·h' + b^cio ≤ d, and one token's
//     expert reads must pass through the inactive part without pushing a
//     hot page (deactivated, it is promoted again when used in time) out
//     before its next use, k(w−n)·φ·x_e ≤ d_inact (x_e = r − a, the expert
//     bytes a token reads
//     of a layer; φ below). The dense window row covers one window, since
//     a dense window is prefetched whole and released; a hot expert is read
//     in every round's window of a token and must stay across them.
//   - When a row fails (internal cases M1t, M3t, M5t, which for MoE also
//     require paging), every byte a token reads misses: disk =
//     (l−g)·(a + φ·x_e)/s, not the dense (l−g)·b/s. No k makes room (the
//     rows grow with k), so the search also starts from every fast-disk
//     device in these cases.
//   - φ, read-around: a page fault on a missing page reads the disk's
//     read-around R (Device.DiskReadAheadBytes; Linux read_ahead_kb, 128 KB
//     by default, 8 MB on some virtual disks) centred on it, while a missed
//     expert is wanted only in slices of s = Model.ExpertSliceBytes (one
//     expert's run in one stack): the first fault reads R/2 of the
//     neighbour before the slice, later faults continue inside it. So
//     φ = 1 + R/2s, at most e/x_e (a token cannot read more than the whole
//     stacks); 1 when either is unknown. Dense layers are read
//     sequentially and gain from read-around.
//   - Measured (bench/moe.sh, 2026-11-26, load 4-10 on 2 cores: a
//     generated qwen3moe, 8 experts in 4.5 MB slices, a disk with an 8 MB
//     read-around, so φ = 1.94): the 2.98 GB model under a cgroup at 60% of
//     its size reads 1.16-1.54 GB per token where a token reads 0.98 GB and
//     ρ·overflow is 0.33 GB: it thrashes. Earlier forms of these rows got
//     it wrong: the hot set alone (φ = 1, no inactive list) called it hot
//     and predicted 190-244 ms against 1755-1910 measured; one row with
//     φ = 1 + R/s called it thrashing but over-charged the bytes (2.19 GB)
//     and missed the 0.58 GB model at 75%, which kept its hot set (61-71
//     MB read a token). These rows: 976 ms predicted against 1193 measured
//     for the 2.98 GB model (−18%; bytes 1.58 GB against 1.28-1.40); the
//     0.58 GB model at 60/75/90% +88%, −64%, −36% (noisy: two runs of
//     the 60% row read 130-161 and 219-286 MB a token). With a measured
//     histogram the hot set grows by the hot experts, and a first form
//     that asked the active part (d − d_inact) for it called the 0.58 GB
//     model at 75% and 90% thrashing, which it was not.
//   - Memory rows that ask for residence without paging (M4, VRAM, Metal)
//     keep b': a layer not paged holds all its experts. Metal (M2) keeps
//     re-reading all b when short: it wires whole buffers.
//
// Why these terms and no more: for fixed k and cases they stay linear in w
// and n (one ILP per case assignment, as the paper's). The true miss curve
// of a skewed router is convex in the overflow (the first bytes paged out
// are the coldest); one rate ρ over the cold set is its chord, exact for
// uniform routing and pessimistic for the coldest experts of a skewed one.
// The model profile (engine/profile/modelprof) computes h and ρ from a
// measured routing histogram when there is one, else from uniform top-k/n,
// and says which in Model.Routing.
//
// # Streams
//
// The papers plan one conversation. Homering's ring runs several at once
// as streams (engine/ring's doc, "Streams"): every device keeps one KV
// cache per stream over the same mapped weights, and each stream's token
// reads only its own. So with S streams (Problem.Streams) the memory rows
// charge S caches and the compute rows one:
//
//	b' = b + S·KV, h' = h + S·KV     in every memory row: RAM (eqs. 27-35),
//	                                 non-evictable, window, hot, VRAM, Metal
//	r' = r + KV                      in α and β (a token's reads)
//
// where KV = 2(h_k e_k + h_v e_v)·n_kv is one layer's cache of the
// context. S = 1 is the paper's model exactly; the rows stay linear in w
// and n for a fixed S, so each S is the same ILP search. Solve decides S:
// with Problem.Streams = S_max > 1 it solves for one stream, then for
// S_max, then bisects, and admits the largest S whose plan is predicted
// within StreamSlowdown (5%) of the one-stream plan (Plan.Streams; at
// least 1). More KV only tightens the rows, so the best time does not
// fall as S grows and the bisection is sound. The bound is one
// conversation's: in a home most replies run alone, and a plan that pages
// weights (or moves layers to a slower device) to keep room for caches
// nobody uses would slow every one of them; 5% is the ring's own bound for
// a difference not worth a new plan (engine/ring.Adopt's τ). So a device
// that holds one stream's cache but not four gives layers to another
// device when that costs under 5%, and the plan admits fewer streams when
// it costs more. Rescore keeps the plan's own S.
//
// # Balance
//
// The objective is a sum over devices, so between devices of (nearly) the
// same speed per layer it has many optima, and an ILP solver returns a
// vertex: the cheaper device filled to its memory row, the other given
// the rest. On the rig's three equal devices that was 28, 30 and 2 layers
// of 60. Time per token does not care, but two things the sum leaves out
// do: a prompt crosses the ring in micro-batches, each device starting on
// the first while the previous one computes the next (engine/ring's doc,
// "Model"), so the prompt takes about the sum of the devices' first
// batches plus the slowest device's whole prompt; and several
// conversations in flight (Streams) go no faster than the slowest device.
// A device filled to its memory row also pages as soon as another app
// takes memory. So after the search Halda balances the plan it found:
// it moves one CPU layer at a time from the device with the most compute
// and disk time per token to the one with the least, as long as every
// device keeps its memory case (a pager also whether its window stays
// resident: M3 and M3t are different cases) and fits, the pair's larger
// time falls, and the plan stays predicted within BalanceSlack (2%) of the
// optimum. So every balanced point lies in the ILP the optimum solved, and
// the plan is never predicted faster than the optimum (when moves could
// cross between M3 and M3t, 7 of 800 random problems balanced below it,
// one to 87 ms from 257: points the case search had missed).
// 2% is below what the rig can measure (two rows of one quiet run that
// differ only in prefetch, bench/ring.sh's (d) and (e), gave 127.6 and
// 121.0 ms per token), so balancing costs decode nothing measurable,
// while an uneven split costs the prompt up to (M−1)/M of the slowest
// device's share: on the rig, 28/30/2 gave a first token in 2821 ms and
// the balanced 19/21/20 in 2435 (prima-ref, quiet, 2026-11-27). Devices
// that differ more keep Halda's split. GPU layers stay where Halda put
// them.
//
// # Decisions the papers leave open
//
//   - Strict rows. The paper's M1-M3 rows are strict (>). w and n are
//     integers, so w > x is exactly w ≥ ⌊x⌋+1: Halda rounds in integer
//     arithmetic and the Solver sees exact integer bounds, no epsilon. The
//     M4 rows use ≤ (the paper writes <): memory filled exactly pages
//     nothing, so it belongs to M4.
//   - Prefetch-release (000 A.1, A.2, 001 A.14.2). The paper's eq. 15
//     charges only the overflow, which holds when one window's CPU layers fit
//     in memory (the next window is prefetched into what the last one
//     frees). Halda adds that window row, (w−n)·b' + c^cpu ≤ d, to the paging
//     cases; a device paging with a larger window re-reads all its CPU
//     layers per token (internal cases M1t/M3t/M5t, reported as M1/M3/M5).
//     This row is why a model larger than the cluster's memory gets k > 1:
//     in the paper's own objective k only multiplies link time.
//   - Non-evictable memory. The KV cache and compute buffers cannot be paged:
//     (l−g)·KV + c^cpu ≤ d (Metal: l·KV + c^cpu + c^gpu ≤ d_metal) on every
//     device, paging or not. The paper counts KV inside the paged overflow.
//   - The head may hold zero layers: it still embeds, runs the output layer
//     and samples (a relay with input and output, as 001's zero-load relay).
//     Problem.HeadHoldsLayers gives it one layer per round at least, for an
//     engine whose ring plan needs a window on every device; with
//     KeepAllDevices and Rounds (a fixed k) a caller can force a ring that
//     Halda alone would not choose (tests and benchmarks of the ring).
//     The embedding row b_i/V is charged once per token on the head's disk.
//   - Metal budget: d_metal = min(recommendedMaxWorkingSetSize, d_avail):
//     the working-set size is a fixed property of the Mac, while other apps
//     may have taken the RAM. Device.MemoryBudget caps both.
//   - Windows (M5). Windows keeps mapped file pages on the standby list and
//     repurposes them under pressure page by page (working-set trimming), so
//     it reclaims gradually like Linux, not all at once like Metal; but a
//     mapped-view page fault reads small clusters without Linux's
//     MADV_SEQUENTIAL read-ahead, so the disk term uses the random-read
//     throughput. d_avail is GlobalMemoryStatusEx's ullAvailPhys (standby +
//     free + zeroed); there is no swap-out credit (file-backed pages are not
//     swapped). CUDA VRAM is treated as on Linux: Halda never plans beyond
//     free VRAM, so WDDM has nothing to page.
//   - s_m^disk. The papers measure it with fio-style large reads, but a
//     paging device gets its weights through page faults on the mapping,
//     which deliver much less: read-ahead restarts at every backward jump
//     between a layer's tensors (files store them by name, kernels read
//     them in graph order), and each fault waits for its read. Measured
//     here: O_DIRECT sequential 1.5 GB/s, a fault sweep in the engine's
//     order 0.6-0.9 GB/s. So when a device's profile has
//     DiskFaultBytesPerSec (engine/profile: a sweep in the engine's order
//     over evicted pages), it is s_m^disk for every OS and case, in the
//     overflow, window and embedding-row terms and against s_threshold;
//     without it Linux and Android charge the sequential and the other OSes
//     the random direct-read throughput.
//   - s_threshold^disk defaults to 100 MB/s (DefaultDiskThreshold).
//   - n_kv is the configured context (Model.ContextTokens), so a plan stays
//     valid as a conversation grows.
//   - GPU layers are the first n of each window (the paper's l^gpu formula).
//   - Rounds. Halda considers only k dividing L (Assumption 1, and prima.cpp's
//     code): with a partial last round l_m = ⌊L/W⌋·w_m + min(w_m, …) depends
//     on the order and is not linear in w. The cost is small for real
//     models: the depths in use (22-126 layers, e.g. 32, 40, 48, 60, 64, 80)
//     all have several divisors, and a prime L still gets k = 1. A windowed
//     engine could later run windows that differ per round instead.
//   - Ties between k keep the smallest k (fewer hops).
//
// # JSON
//
// Device, Model, Problem and Plan carry json tags in snake_case with units
// in the name where they are not obvious (ram_available_bytes,
// disk_seq_read_bytes_per_s, link_s, kv_copy_cpu_s). The profiler writes a
// Device (`homering profile --json`), `homering plan --devices` reads one
// device, a list, or {"devices": [...]}, and `--shape` reads a Model.
// FLOPS and byte maps are keyed by ggml's type names in lower case ("q4_k",
// "q6_k", "q8_0", "f16", "f32"), as app's GGUF converter writes them.
//
// # Invariants
//
// A Plan from Solve satisfies: Σ w = Window, K·Window = L; 0 ≤ n ≤ w; every
// layer appears in exactly one range of one device; the head is Ring[0];
// ResidentBytes ≤ the device's memory and VRAMBytes ≤ its free VRAM;
// PredictedMs = ComputeMs + DiskMs + NetworkMs is the full (max-form) model
// of the plan, equal to the ILP objective plus constant; 1 ≤ Streams ≤
// max(Problem.Streams, 1), and the memory figures hold Streams caches. Errors wrap
// ErrInvalidProblem (*ValidationError), ErrNoFeasiblePlan
// (*NoFeasiblePlanError with needed and available bytes) or ErrNoSolver.
package halda
