//go:build !windows

package sysinfo

import "time"

func now() time.Time { return time.Now() }
