package guest

import (
	"crypto/rand"
	"encoding/binary"
	"io"
)

// WASI errno values the imports return.
const (
	ErrnoSuccess = 0
	ErrnoBadf    = 8
	ErrnoFault   = 21
	ErrnoInval   = 28
)

// Exit is the panic by which proc_exit leaves a translated module.
type Exit int32

// WASI serves the WASI calls both modules import, when they run
// translated to Go ahead of time, over the instance's linear memory: an
// empty environment, stderr kept (stdout discarded, as on wazero),
// randomness from crypto/rand and proc_exit as a panic of Exit. The clock
// is each host's own. Not safe for concurrent use: an instance runs on one
// goroutine at a time.
type WASI struct {
	// Mem is the instance's linear memory, set once the instance exists.
	Mem *[]byte
	// Stderr receives what the guest writes to its stderr.
	Stderr io.Writer
}

// Span returns n bytes of linear memory at ptr; false when they are
// outside it.
func (w *WASI) Span(ptr, n uint64) ([]byte, bool) {
	mem := *w.Mem
	if ptr+n > uint64(len(mem)) {
		return nil, false
	}
	return mem[ptr : ptr+n : ptr+n], true
}

// Xenviron_get writes the (empty) environment.
func (w *WASI) Xenviron_get(_, _ int32) int32 { return ErrnoSuccess }

// Xenviron_sizes_get reports an empty environment.
func (w *WASI) Xenviron_sizes_get(count, size int32) int32 {
	if e := w.PutUint32(count, 0); e != ErrnoSuccess {
		return e
	}
	return w.PutUint32(size, 0)
}

// Xfd_write keeps what the guest writes to stderr (panic messages, to
// explain a trap) and discards stdout.
func (w *WASI) Xfd_write(fd, iovs, iovsLen, written int32) int32 {
	var out io.Writer
	switch fd {
	case 1:
		out = io.Discard
	case 2:
		out = w.Stderr
	default:
		return ErrnoBadf
	}
	vecs, ok := w.Span(uint64(uint32(iovs)), uint64(uint32(iovsLen))*8)
	if !ok {
		return ErrnoFault
	}
	var total uint32
	for i := 0; i < len(vecs); i += 8 {
		b, ok := w.Span(uint64(binary.LittleEndian.Uint32(vecs[i:])), uint64(binary.LittleEndian.Uint32(vecs[i+4:])))
		if !ok {
			return ErrnoFault
		}
		_, _ = out.Write(b)
		total += uint32(len(b))
	}
	return w.PutUint32(written, total)
}

// Xproc_exit ends the instance.
func (w *WASI) Xproc_exit(code int32) { panic(Exit(code)) }

// Xrandom_get fills the buffer from crypto/rand.
func (w *WASI) Xrandom_get(buf, n int32) int32 {
	b, ok := w.Span(uint64(uint32(buf)), uint64(uint32(n)))
	if !ok {
		return ErrnoFault
	}
	_, _ = rand.Read(b)
	return ErrnoSuccess
}

// PutUint32 writes v at ptr.
func (w *WASI) PutUint32(ptr int32, v uint32) int32 {
	b, ok := w.Span(uint64(uint32(ptr)), 4)
	if !ok {
		return ErrnoFault
	}
	binary.LittleEndian.PutUint32(b, v)
	return ErrnoSuccess
}

// PutUint64 writes v at ptr.
func (w *WASI) PutUint64(ptr int32, v uint64) int32 {
	b, ok := w.Span(uint64(uint32(ptr)), 8)
	if !ok {
		return ErrnoFault
	}
	binary.LittleEndian.PutUint64(b, v)
	return ErrnoSuccess
}
