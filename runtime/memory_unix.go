//go:build linux || darwin

package runtime

import (
	"context"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// withMemoryAllocator makes instances created with ctx back their linear
// memory with a reserved virtual range that grows in place: growing never
// copies (wazero's default reallocates and copies the whole memory), pages
// the guest never touches never become resident, and closing an interpreter
// returns its memory to the OS at once.
func withMemoryAllocator(ctx context.Context) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(newMappedMemory))
}

// mappedMemory is a linear memory in an mmap reservation of its maximum
// size, made accessible as it grows.
type mappedMemory struct {
	buf       []byte // the whole reservation (PROT_NONE beyond committed)
	committed uint64
}

func newMappedMemory(_, _ uint64) experimental.LinearMemory {
	return &mappedMemory{}
}

// Reallocate makes the first size bytes usable and returns them.
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.buf == nil {
		if err := m.reserve(); err != nil {
			return nil
		}
	}
	if size > uint64(len(m.buf)) {
		return nil
	}
	if size > m.committed {
		page := uint64(syscall.Getpagesize())
		end := (size + page - 1) / page * page
		if err := syscall.Mprotect(m.buf[m.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		m.committed = end
	}
	return unsafe.Slice(unsafe.SliceData(m.buf), len(m.buf))[:size:len(m.buf)]
}

// reserve maps the largest memory wasm32 can address (4 GiB of address
// space, not of memory).
func (m *mappedMemory) reserve() error {
	buf, err := syscall.Mmap(-1, 0, 1<<32, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return err
	}
	m.buf = buf
	return nil
}

// Free unmaps the memory.
func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf, m.committed = nil, 0
	}
}
