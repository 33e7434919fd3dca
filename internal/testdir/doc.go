// Package testdir gives tests a scratch directory they can use under Wine
// too: t.TempDir's cleanup fails the test when os.RemoveAll fails, which Go
// 1.26's does under Wine 8.0 ("unlinkat: Invalid function"); removing each
// entry with os.Remove works there. Only tests import this package.
package testdir
