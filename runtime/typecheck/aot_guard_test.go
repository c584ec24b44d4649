//go:build (linux || darwin) && (amd64 || arm64)

package typecheck

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/sys"

	"github.com/monty-go/monty/runtime/internal/guest"
)

// guardedInstance is an instance of the translated checker without the
// module: its linear memory, 64 KiB accessible in a guarded reservation
// with a limit of 1 MiB, is what the tests touch through run.
func guardedInstance(t *testing.T) (*aotInstance, []byte) {
	t.Helper()
	a := &aotInstance{}
	a.Max = 1 << 20
	mem := a.NewGuardedMemory(1 << 16)
	require.NotNil(t, mem, "%v", a.Err)
	require.True(t, a.Guarded)
	t.Cleanup(func() { a.Free(&mem) })
	return a, mem
}

// touch stores to linear memory at off, unchecked, as the translated code
// does where it has guard pages.
//
//go:noinline
func touch(mem []byte, off uintptr) {
	*(*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(mem)), off)) = 1
}

// A stray access (past linear memory's length, in its guard pages) of a
// check whose context is live is wazero's out-of-bounds trap, not an
// interruption; an interrupted check is the context's exit, not a trap.
func TestAOTGuardFaultIsStrayOrInterrupted(t *testing.T) {
	a, mem := guardedInstance(t)
	for _, off := range []uintptr{1 << 16, 1<<16 + 4095, 1 << 20, 1 << 32, 1<<33 + 1<<16 - 8} {
		err := a.run(context.Background(), func() { touch(mem, off) })
		require.EqualError(t, err, "wasm error: out of bounds memory access", "a store at %#x", off)
		require.ErrorIs(t, err, guest.ErrOutOfBounds)
	}
	// The memory in bounds still works.
	require.NoError(t, a.run(context.Background(), func() { touch(mem, 1<<16-1) }))

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() {
		<-started
		cancel()
	}()
	err := a.run(ctx, func() {
		close(started)
		for {
			touch(mem, 0) // faults once the reservation's rights are taken
		}
	})
	var exit *sys.ExitError
	require.True(t, errors.As(err, &exit), "an interrupted check is an exit, not a trap: %v", err)
	require.Equal(t, uint32(sys.ExitCodeContextCanceled), exit.ExitCode())
}
