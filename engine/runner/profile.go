package runner

// LowerPriority lowers this process (every thread of it on Linux) to the
// nice value of a serving worker. `homering profile --progress`, the
// agent's background measurement, runs at it so that it yields the CPU to
// everything else; the agent stops it when a chat starts.
func LowerPriority() error { return lowerPriority() }
