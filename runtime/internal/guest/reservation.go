package guest

import "unsafe"

// Reservation is the linear memory of an instance translated to Go ahead
// of time: Max bytes of address space mapped at the instance's first
// NewMemory, which it grows into in place, so that only the pages it
// writes cost memory. Not safe for concurrent use, except Interrupt.
type Reservation struct {
	// Max is the size reserved: the instance's memory limit.
	Max uint64
	mem []byte
}

// NewMemory reserves Max bytes and returns the first size of them, the
// translated New's memory; nil when one was reserved already, size is
// past Max or the system refuses the mapping.
func (r *Reservation) NewMemory(size int) []byte {
	if r.mem != nil || uint64(size) > r.Max {
		return nil
	}
	if r.mem = Reserve(r.Max); r.mem == nil {
		return nil
	}
	return r.mem[:size]
}

// Interrupt takes the reservation's access rights away (see Interrupt);
// it does nothing when nothing is reserved.
func (r *Reservation) Interrupt() {
	if r.mem != nil {
		_ = Interrupt(r.mem)
	}
}

// Contains reports whether addr is inside the reservation.
func (r *Reservation) Contains(addr uintptr) bool {
	if len(r.mem) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	return addr >= start && addr-start < uintptr(len(r.mem))
}

// Free unmaps the reservation, and empties mem, the instance's view of
// it, so that nothing reads it afterwards.
func (r *Reservation) Free(mem *[]byte) {
	if r.mem == nil {
		return
	}
	if mem != nil {
		*mem = nil
	}
	Free(r.mem)
	r.mem = nil
}
