//go:build linux

// Package pages hands the resident pages of an embedded wasm module back to
// the kernel once an engine has compiled it.
package pages

import (
	"syscall"
	"unsafe"
)

// Release lets the kernel drop the resident pages of b, which must be data
// embedded in the executable (go:embed) and never written. Decoding,
// validating and hashing a module makes all of it resident; once compiled
// only its data segments are read again, at each instantiation. Embedded
// data is backed by the executable file, so a page dropped comes back
// unchanged from it when read. Never pass other memory: dropping an
// anonymous page zeroes it.
func Release(b []byte) {
	page := syscall.Getpagesize()
	// Only whole pages of b: the ones it shares at either end may hold
	// other data.
	skip := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(page))) % page
	n := (len(b) - skip) / page * page
	if n <= 0 {
		return
	}
	// Advice only: on failure the pages simply stay resident.
	_ = syscall.Madvise(b[skip:skip+n], syscall.MADV_DONTNEED)
}
