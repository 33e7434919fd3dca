// Package testwait is the tests' one way to wait for something that happens
// on its own time (a child process, a link, mDNS): poll a condition until
// it holds or a deadline passes, never sleep a fixed time for an outcome.
// Pure code needs none of it (its time comes in as events), and goroutine
// code whose clock can be faked uses testing/synctest instead. Only tests
// import this package.
package testwait
