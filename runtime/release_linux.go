//go:build linux

package runtime

import (
	"syscall"
	"unsafe"
)

// releaseModulePages lets the kernel drop the resident pages of the embedded
// module once an engine has compiled it. Decoding, validating and hashing it
// made all 11 MB of it resident; afterwards only the data segments are read
// again, at each instantiation. The module lives in the executable's data
// (go:embed), so its pages are backed by the executable file and come back
// unchanged from it when read. Any other module is left alone: its memory
// may be anonymous, where dropping pages would zero them.
func releaseModulePages(module []byte) {
	if !isEmbeddedModule(module) {
		return
	}
	page := syscall.Getpagesize()
	// Only whole pages of the module: the ones it shares at either end may
	// hold other data.
	skip := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(module)))%uintptr(page))) % page
	n := (len(module) - skip) / page * page
	if n <= 0 {
		return
	}
	// Advice only: on failure the pages simply stay resident.
	_ = syscall.Madvise(module[skip:skip+n], syscall.MADV_DONTNEED)
}
