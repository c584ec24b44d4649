//go:build linux || darwin

package guest

import "syscall"

// CanInterrupt reports whether Interrupt can stop code running in a
// reservation (it can where memory is mapped with mmap).
const CanInterrupt = true

// Reserve maps size bytes of zeros for a translated instance's linear
// memory to grow into without copying: pages never touched cost no memory,
// and Free returns the touched ones at once. It returns nil when the
// system refuses the mapping (the memory then lives on the Go heap).
func Reserve(size uint64) []byte {
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// Interrupt takes every access right from a reservation: the next load or
// store of code running in it faults, which a goroutine running with
// debug.SetPanicOnFault turns into a panic (see Faulted). The reservation
// is unusable afterwards; only Free is left to do with it.
func Interrupt(b []byte) error { return syscall.Mprotect(b, syscall.PROT_NONE) }

// Free unmaps a reservation.
func Free(b []byte) { _ = syscall.Munmap(b) }
