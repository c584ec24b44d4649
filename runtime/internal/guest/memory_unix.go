//go:build linux || darwin

package runtime

import "syscall"

// reserveMemory maps size bytes of zeros for a translated instance's linear
// memory to grow into without copying: pages never touched cost no memory,
// and freeMemory returns the touched ones at once. It returns nil when the
// system refuses the mapping (the memory then lives on the Go heap).
func reserveMemory(size uint64) []byte {
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// freeMemory unmaps a reservation.
func freeMemory(b []byte) { _ = syscall.Munmap(b) }
