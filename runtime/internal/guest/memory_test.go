//go:build linux || darwin

package guest

import (
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInterrupt: after Interrupt, an access to the reservation faults, and
// on a goroutine with SetPanicOnFault the fault is a panic naming an
// address inside it (how runtime/typecheck stops a translated check).
func TestInterrupt(t *testing.T) {
	require.True(t, CanInterrupt)
	b := Reserve(1 << 20)
	require.NotNil(t, b)
	defer Free(b)
	b[4096] = 7
	require.NoError(t, Interrupt(b))
	var addr uintptr
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			r := recover()
			f, ok := r.(interface{ Addr() uintptr })
			require.True(t, ok, "the panic %v carries no address", r)
			addr = f.Addr()
		}()
		sink = b[4096]
		t.Error("reading an interrupted reservation did not fault")
	}()
	start := uintptr(unsafe.Pointer(&b[0]))
	assert.GreaterOrEqual(t, addr, start)
	assert.Less(t, addr, start+uintptr(len(b)))
}

var sink byte

// TestWASI: the calls write where the guest asks and refuse what is
// outside its memory.
func TestWASI(t *testing.T) {
	mem := make([]byte, 64)
	var stderr Stderr
	stderr.Max = 100
	w := &WASI{Mem: &mem, Stderr: &stderr}
	assert.EqualValues(t, ErrnoSuccess, w.Xenviron_sizes_get(0, 4))
	assert.EqualValues(t, ErrnoFault, w.PutUint64(60, 1))
	assert.EqualValues(t, ErrnoFault, w.Xrandom_get(32, 64))
	assert.EqualValues(t, ErrnoSuccess, w.Xrandom_get(32, 32))
	// An iovec at 0 pointing at "hi" at 16, written to stderr, count at 8.
	copy(mem[16:], "hi")
	mem[0], mem[4] = 16, 2
	assert.EqualValues(t, ErrnoSuccess, w.Xfd_write(2, 0, 1, 8))
	assert.Equal(t, "hi", stderr.String())
	assert.EqualValues(t, 2, mem[8])
	assert.EqualValues(t, ErrnoBadf, w.Xfd_write(3, 0, 1, 8))
	assert.EqualValues(t, ErrnoFault, w.Xfd_write(2, 0, 100, 8))
	assert.PanicsWithValue(t, Exit(3), func() { w.Xproc_exit(3) })
}
