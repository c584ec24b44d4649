//go:build !unix

package main

// maxRSS reports no peak resident memory: this system's rusage has none.
func maxRSS(any) (int64, bool) { return 0, false }
