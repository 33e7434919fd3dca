// Package testlog gives tests a writer (and a logger) that sends lines to
// the test's log while the test runs and drops them after it ended.
//
// A server, link reader or child-process pump started by a test may still
// log after the test returned; t.Log then panics ("Log in goroutine after
// Test... has completed") and fails the whole run. Only tests import this
// package.
package testlog
