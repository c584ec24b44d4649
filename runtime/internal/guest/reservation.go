package guest

import (
	"fmt"
	"unsafe"
)

// Reservation is the linear memory of an instance translated to Go ahead
// of time, mapped at the instance's first NewMemory or NewGuardedMemory
// and grown into in place, so that only the pages it writes cost memory:
// Max bytes (the instance's memory limit), or GuardedSize bytes
// accessible up to the memory's length (guard pages). Not safe for
// concurrent use, except Interrupt.
type Reservation struct {
	// Max is the instance's memory limit.
	Max uint64
	// Err says why NewGuardedMemory returned nil.
	Err error
	// Guarded reports whether the memory has guard pages.
	Guarded bool
	mem     []byte
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

// NewGuardedMemory reserves GuardedSize bytes with access only to the
// first size of them, and returns those, with capacity Max to grow into
// (granting access page by page): the translated New's memory in a build
// without bounds checks, where an access past its length faults. It
// returns nil, and sets Err, when one was reserved already, size is past
// Max or the system refuses the mapping.
func (r *Reservation) NewGuardedMemory(size int) []byte {
	switch {
	case uint64(size) > r.Max:
		r.Err = fmt.Errorf("%w: the module starts with %d pages of linear memory, its limit is %d", ErrPastMax, size>>16, r.Max>>16)
		return nil
	case r.mem != nil || r.Max > 1<<32:
		r.Err = fmt.Errorf("no guarded linear memory of %d bytes, up to %d, for this instance", size, r.Max)
		return nil
	}
	mem, err := ReserveGuarded()
	if err == nil && size > 0 {
		if err = Grant(mem[:size]); err != nil {
			Free(mem)
		}
	}
	if err != nil {
		r.Err = fmt.Errorf("reserve %d GiB of address space for linear memory with guard pages: %w "+
			"(each interpreter on the ahead-of-time engine needs this much; is the address space limited, ulimit -v?)",
			GuardedSize>>30, err)
		return nil
	}
	r.mem, r.Guarded = mem, true
	return mem[:size:r.Max]
}

// Fault returns what to make of p, a value recovered from a call into the
// module made with debug.SetPanicOnFault on: ErrOutOfBounds for a fault
// inside a guarded reservation (an access past linear memory's length), p
// itself when it is no fault. A fault anywhere else is not the module's:
// it ends the process (Crash).
func (r *Reservation) Fault(p any) any {
	f, ok := p.(interface{ Addr() uintptr })
	switch {
	case !ok:
		return p
	case r.Guarded && r.Contains(f.Addr()):
		return ErrOutOfBounds
	}
	Crash(p)
	return nil
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
	r.mem, r.Guarded = nil, false
}
