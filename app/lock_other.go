//go:build !unix

package app

// lockAgent: without flock, the API check in runAgent keeps one agent.
func lockAgent(string) (func(), error) { return func() {}, nil }
