//go:build (linux || darwin) && (amd64 || arm64)

package guest

import (
	"os"
	"os/exec"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultOf reads b[i] with faults turned into panics and returns what
// Fault makes of the panic (nil when the read did not fault).
func faultOf(r *Reservation, b []byte, i uint64) (got any) {
	defer func() {
		if p := recover(); p != nil {
			got = r.Fault(p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	sink = b[:cap(b)][i]
	return nil
}

// TestGuardedMemory: a guarded reservation is accessible up to the
// memory's length and grants pages as it grows; an access past the
// length, anywhere in the reservation, is ErrOutOfBounds.
func TestGuardedMemory(t *testing.T) {
	r := Reservation{Max: 4 << 16}
	b := r.NewGuardedMemory(1 << 16)
	require.NotNil(t, b, "%v", r.Err)
	defer r.Free(nil)
	assert.True(t, r.Guarded)
	assert.Len(t, b, 1<<16)
	assert.Equal(t, 4<<16, cap(b))
	assert.Nil(t, r.NewGuardedMemory(1<<16), "one reservation per instance")
	assert.Error(t, r.Err)

	b[1<<16-1] = 1
	assert.Nil(t, faultOf(&r, b, 1<<16-1))
	assert.Equal(t, ErrOutOfBounds, faultOf(&r, b, 1<<16))
	require.NoError(t, Grant(b[1<<16:2<<16]))
	assert.Nil(t, faultOf(&r, b, 2<<16-1))
	assert.Equal(t, ErrOutOfBounds, faultOf(&r, b, 2<<16))
	// The far end of the reservation: the last byte an 8-byte load at the
	// largest address plus the largest offset reads.
	far := unsafe.Slice(unsafe.SliceData(b), GuardedSize)
	assert.Equal(t, ErrOutOfBounds, faultOf(&r, far, 1<<33-2+7))
	assert.Equal(t, "not a fault", r.Fault("not a fault"))

	small := Reservation{Max: 1 << 16}
	assert.Nil(t, small.NewGuardedMemory(2<<16), "past Max")
}

// TestForeignFaultCrashes: a fault outside the reservation is not the
// module's: the process ends, as Go ends it for such a fault, instead of
// going on as if the module had trapped.
func TestForeignFaultCrashes(t *testing.T) {
	if os.Getenv("GUEST_FOREIGN_FAULT") == "1" {
		r := Reservation{Max: 1 << 16}
		require.NotNil(t, r.NewGuardedMemory(1<<16))
		other, err := syscall.Mmap(-1, 0, 1<<16, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		require.NoError(t, err)
		got := faultOf(&r, other, 100)
		t.Fatalf("Fault returned %v for a fault outside the reservation", got)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestForeignFaultCrashes$")
	cmd.Env = append(os.Environ(), "GUEST_FOREIGN_FAULT=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "fatal error: unexpected fault address")
	assert.Contains(t, string(out), "outside the translated module's memory")
}
