package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/monty-go/monty/runtime/internal/guest"
)

// AOTInstance is one instance of the interpreter module translated to Go
// ahead of time by wasm2go: the module's exports under the names wasm2go
// gives them. Only github.com/monty-go/monty/wasm/aot implements it;
// programs opt in by importing that module and never use this type.
type AOTInstance interface {
	X_initialize()
	Xmonty_abi_version() int32
	Xmonty_reserve(n int32) int32
	Xmonty_call(op, handle, n int32) int64
	Xmonty_release()
	Xmemory() AOTMemory
}

// AOTMemory is the linear memory of an [AOTInstance].
type AOTMemory = interface {
	Slice() *[]byte
	Grow(delta, max int64) int64
}

// AOTImports are the functions an [AOTInstance] imports (docs/abi.md):
// monty.print and the six WASI calls, and NewMemory or NewGuardedMemory,
// which give a new instance its linear memory. This package implements
// them.
type AOTImports interface {
	// NewMemory returns size bytes of zeros for a new instance's linear
	// memory, with capacity up to the engine's memory limit to grow into
	// in place; nil when the instance should allocate its own. A
	// translation that checks the bounds of every access calls it.
	NewMemory(size int) []byte
	// NewGuardedMemory returns size bytes of zeros for a new instance's
	// linear memory, at the start of a reservation of all a wasm32 access
	// can reach, accessible only up to size, with capacity up to the
	// engine's memory limit: a stray access faults, and becomes a trap.
	// A translation with guard pages calls it, and cannot run without it
	// (nil).
	NewGuardedMemory(size int) []byte
	Xprint(stream, ptr, n int32) int32
	Xclock_time_get(id int32, precision int64, result int32) int32
	Xenviron_get(environ, buf int32) int32
	Xenviron_sizes_get(count, size int32) int32
	Xfd_write(fd, iovs, iovsLen, written int32) int32
	Xproc_exit(code int32)
	Xrandom_get(buf, n int32) int32
}

// translatedModule is what RegisterAOT received.
type translatedModule struct {
	sha256      string
	newInstance func(AOTImports) AOTInstance
}

var registeredAOT atomic.Pointer[translatedModule]

// RegisterAOT makes engines run the interpreter module translated to Go
// instead of compiling the embedded monty.wasm with wazero: no compilation,
// no cache, an interpreter ready in milliseconds. moduleSHA256 is the
// SHA-256 of the monty.wasm it was translated from; NewEngine refuses a
// translation of another module. Engines given [WithModule] still use
// wazero.
//
// It is called by the init function of github.com/monty-go/monty/wasm/aot,
// which a program imports to opt in (docs/building.md); nothing else
// should call it. It is safe for concurrent use.
func RegisterAOT(moduleSHA256 string, newInstance func(AOTImports) AOTInstance) {
	registeredAOT.Store(&translatedModule{sha256: moduleSHA256, newInstance: newInstance})
}

// AOTLinked reports whether engines made with the default options run the
// interpreter translated to Go ahead of time ([RegisterAOT]).
func AOTLinked() bool { return registeredAOT.Load() != nil }

// aotModule is the translated module. Each instance's linear memory is a
// reservation that grows in place: of all a wasm32 access can reach, with
// guard pages, where the translation has them (docs/building.md#guard-pages);
// else of the memory limit.
type aotModule struct {
	newInstance func(AOTImports) AOTInstance
	maxBytes    uint64
}

func (m *aotModule) machine() bool { return true }

func (m *aotModule) close(context.Context) {}

func (m *aotModule) instantiate(ctx context.Context, it *Interpreter) (instance, error) {
	a := &aotInstance{it: it, Reservation: guest.Reservation{Max: m.maxBytes}, WASI: guest.WASI{Stderr: &it.stderr}}
	err := a.run(ctx, func() {
		a.mod = m.newInstance(a)
		a.Mem = a.mod.Xmemory().Slice()
		a.mod.X_initialize()
	})
	if err != nil {
		_ = a.close(ctx)
		switch {
		case errors.Is(a.Err, guest.ErrPastMax):
			err = fmt.Errorf("%w: %w (WithMaxMemoryPages)", ErrMemoryLimit, a.Err)
		case a.Err != nil:
			err = a.Err // the reservation the translation needs was refused
		}
		return nil, fmt.Errorf("monty: instantiate interpreter: %w", err)
	}
	return a, nil
}

// aotInstance is one instance of the translated module, and the imports
// that serve it.
type aotInstance struct {
	guest.WASI        // the WASI calls but the clock; WASI.Mem is the linear memory
	guest.Reservation // behind *Mem unless the system refused it (NewMemory without guard pages)
	it                *Interpreter
	mod               AOTInstance
	ctx               context.Context // of the call in progress
}

// run calls f, the only way into the module, with memory faults turned
// into panics: a panic inside it (a trap of the translated code, an
// access past linear memory's length faulting in its guard pages,
// proc_exit, linear memory past the engine's cap) becomes an error. A
// fault outside the instance's memory is not the module's and ends the
// process, as it would without this (guest.Reservation.Fault).
func (a *aotInstance) run(ctx context.Context, f func()) (err error) {
	a.ctx = ctx
	defer func() {
		a.ctx = nil
		if r := recover(); r != nil {
			err = trapOf(a.Fault(r))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	f()
	a.checkMemory()
	return nil
}

// checkMemory traps when the linear memory grew past the engine's cap (the
// trap matches ErrMemoryLimit): in a translation without guard pages,
// memory.grow past the reservation moves the memory to the Go heap, up to
// wasm32's 4 GiB, so the cap is checked after every call and at every
// clock read (which the guest makes every 255 bytecode instructions while
// a time budget is armed). With guard pages, memory.grow past the cap
// fails, as on wazero.
func (a *aotInstance) checkMemory() {
	if a.Mem != nil && uint64(len(*a.Mem)) > a.Max {
		panic(fmt.Errorf("%w: linear memory grew past %d pages (WithMaxMemoryPages)", ErrMemoryLimit, a.Max>>16))
	}
}

// trapOf describes a panic of the translated module like wazero describes
// the same trap ("wasm error: unreachable").
func trapOf(r any) error {
	switch r := r.(type) {
	case guest.Exit:
		return fmt.Errorf("module closed with exit_code(%d)", int32(r))
	case string:
		return errors.New("wasm error: " + r)
	case error:
		return fmt.Errorf("wasm error: %w", r)
	}
	return fmt.Errorf("wasm error: %v", r)
}

func (a *aotInstance) abiVersion(ctx context.Context) (v uint32, err error) {
	err = a.run(ctx, func() { v = uint32(a.mod.Xmonty_abi_version()) })
	return v, err
}

func (a *aotInstance) reserve(ctx context.Context, n uint32) (ptr uint32, err error) {
	err = a.run(ctx, func() { ptr = uint32(a.mod.Xmonty_reserve(int32(n))) })
	return ptr, err
}

func (a *aotInstance) call(ctx context.Context, op, handle, n uint32) (packed uint64, err error) {
	err = a.run(ctx, func() { packed = uint64(a.mod.Xmonty_call(int32(op), int32(handle), int32(n))) })
	return packed, err
}

func (a *aotInstance) release(ctx context.Context) error {
	return a.run(ctx, a.mod.Xmonty_release)
}

func (a *aotInstance) read(ptr, n uint32) ([]byte, bool) { return a.Span(uint64(ptr), uint64(n)) }

func (a *aotInstance) write(ptr uint32, b []byte) bool {
	dst, ok := a.Span(uint64(ptr), uint64(len(b)))
	copy(dst, b)
	return ok
}

func (a *aotInstance) close(context.Context) error {
	a.Free(a.Mem)
	a.mod = nil
	return nil
}

// The imports guest.WASI does not serve.

// Xprint is monty.print.
func (a *aotInstance) Xprint(stream, ptr, n int32) int32 {
	b, ok := a.read(uint32(ptr), uint32(n))
	if !ok {
		return 1
	}
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	// The host's code, the print callback's too: a fault in it is no
	// stray access of the module's.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(false))
	return int32(a.it.printOutput(ctx, uint32(stream), b))
}

// Xclock_time_get serves the wall clock and the interpreter's monotonic
// clock, which cancellation moves (docs/abi.md).
func (a *aotInstance) Xclock_time_get(id int32, _ int64, result int32) int32 {
	var t int64
	switch id {
	case 0:
		t = time.Now().UnixNano()
	case 1:
		a.checkMemory()
		t = a.it.nanotime()
	default:
		return guest.ErrnoInval
	}
	return a.PutUint64(result, uint64(t))
}
