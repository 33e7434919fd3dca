// Package agent is the one owner of a running agent's state: the node, the
// planner, the engine child that runs every chat (alone or as a ring's
// head) and serves other heads' ring jobs, the ring job kept for a
// conversation's next turn, the calibration learnt from runs and the
// background measurement of this device. The HTTP layer (app/api) serves
// it; the composition root (app) builds it from the config and the
// identity and runs it.
package agent
