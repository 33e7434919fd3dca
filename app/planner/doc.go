// Package planner is the agent's one planner: every plan the agent shows or
// runs comes from Planner.Next, so the device map (GET /api/v1/plan), the
// next chat (UI, CLI and the three compatible APIs), the model list's
// fits/tight/too-big labels and calibration see the same plan for the same
// inputs.
//
// The inputs of a plan:
//   - this device's profile (measured by engine/profile, else a default
//     with the memory the OS reports) and its memory budget (its own
//     setting);
//   - each paired, contributing, visible peer's answer to the last look:
//     its profile, which carries that device's own memory budget, and the
//     rolling median of the one-way time of a hidden state to it
//     (calib.Calibrator.Link). Run looks at every candidate every
//     LookEvery in the background over the peer's long-lived control link;
//     a chat asks (Refresh) only peers never looked at yet, and the device
//     map (Look, LastLook) shows the same answers: one peer table;
//   - the model's shape (read from the GGUF once per file, size and
//     modification time) and the context size (n_kv);
//   - the calibration ratios of earlier runs (calib.FromRatios,
//     calib.Recalibrate);
//   - the request's own options: every device (KeepAllDevices), the rounds
//     per token, devices to leave out (they refused a job), and how many
//     conversations the ring job may run at once (DefaultStreams, 4):
//     Halda charges each its KV cache on every device and admits as many
//     as memory allows (halda.Plan.Streams), which the job enforces.
//
// Next builds the Halda problem from them, solves it (an identical problem
// is answered from a memo: a turn whose inputs did not change solves no
// ILP), and keeps the last plan a chat installed when the new one is no
// clear gain, both scored under this problem (halda.Rescore; the last plan
// with MemorySlack, so a memory reading a few MB lower does not charge it
// paging): on the same devices only calibration moved, and the new plan
// must be predicted below KeepMargin (0.8) of the last, so a kept ring job
// is not dropped for a difference within calibration's own error; a
// device joining or leaving is judged by ring.Adopt's τ (0.95).
// Next never changes what the next call returns: only Install does, when a
// chat really runs a plan. A plan's Problem (calibrated) goes with the ring
// job: after a loss the engine child re-plans from it (ring.PlanWithout),
// so a loss is decided there, not here.
package planner
