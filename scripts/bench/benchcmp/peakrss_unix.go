//go:build unix

package main

import (
	goruntime "runtime"
	"syscall"
)

// maxRSS is the peak resident memory in bytes of the process whose
// SysUsage is usage.
func maxRSS(usage any) (int64, bool) {
	u, ok := usage.(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	if goruntime.GOOS == "darwin" {
		return u.Maxrss, true // bytes there
	}
	return u.Maxrss * 1024, true // KiB elsewhere
}
