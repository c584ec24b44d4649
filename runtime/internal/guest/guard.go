//go:build (linux || darwin) && (amd64 || arm64)

package guest

import "syscall"

// ReserveGuarded maps GuardedSize bytes with no access rights, charged to
// nothing until Grant opens them: an access to them faults.
func ReserveGuarded() ([]byte, error) {
	return syscall.Mmap(-1, 0, GuardedSize, syscall.PROT_NONE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
}

// Grant gives read and write access to b, whole pages of a guarded
// reservation.
func Grant(b []byte) error { return syscall.Mprotect(b, syscall.PROT_READ|syscall.PROT_WRITE) }
