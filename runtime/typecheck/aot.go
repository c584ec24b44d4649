package typecheck

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/internal/guest"
)

// AOTInstance is one instance of the checker module translated to Go
// ahead of time by wasm2go: the module's exports under the names wasm2go
// gives them. Only github.com/monty-go/monty/wasm/aot/checker implements
// it; programs opt in by importing that package and never use this type.
type AOTInstance interface {
	X_initialize()
	Xchecker_abi_version() int32
	Xchecker_reserve(n int32) int32
	Xchecker_call(op, n int32) int64
	Xmemory() AOTMemory
}

// AOTMemory is the linear memory of an [AOTInstance].
type AOTMemory = interface {
	Slice() *[]byte
	Grow(delta, max int64) int64
}

// AOTImports are the functions an [AOTInstance] imports: the seven WASI
// calls of the checker module, and NewMemory or NewGuardedMemory, which
// give a new instance its linear memory. This package implements them.
type AOTImports interface {
	// NewMemory returns size bytes of zeros for a new instance's linear
	// memory, with capacity up to the checker's memory limit to grow into
	// in place. A translation that checks the bounds of every access
	// calls it.
	NewMemory(size int) []byte
	// NewGuardedMemory returns size bytes of zeros for a new instance's
	// linear memory, at the start of a reservation of all a wasm32 access
	// can reach, accessible only up to size, with capacity up to the
	// checker's memory limit: a stray access faults, and becomes a trap.
	// A translation with guard pages calls it, and cannot run without it
	// (nil).
	NewGuardedMemory(size int) []byte
	Xclock_time_get(id int32, precision int64, result int32) int32
	Xenviron_get(environ, buf int32) int32
	Xenviron_sizes_get(count, size int32) int32
	Xfd_write(fd, iovs, iovsLen, written int32) int32
	Xproc_exit(code int32)
	Xrandom_get(buf, n int32) int32
	Xsched_yield() int32
}

// translatedChecker is what RegisterAOT received.
type translatedChecker struct {
	sha256      string
	newInstance func(AOTImports) AOTInstance
}

var registeredAOT atomic.Pointer[translatedChecker]

// RegisterAOT makes Checkers run the checker module translated to Go
// instead of compiling the embedded checker.wasm with wazero: no
// compilation, no cache, a first check in milliseconds. moduleSHA256 is the
// SHA-256 of the checker.wasm it was translated from; a Checker refuses a
// translation of another module. Checkers given [WithModule] or
// [WithWazero] still use wazero, and so does every Checker on a system
// without mmap, where a running check could not be stopped
// (docs/building.md).
//
// It is called by the init function of
// github.com/monty-go/monty/wasm/aot/checker, which a program imports to
// opt in (docs/building.md); nothing else should call it. It is safe for
// concurrent use.
func RegisterAOT(moduleSHA256 string, newInstance func(AOTImports) AOTInstance) {
	registeredAOT.Store(&translatedChecker{sha256: moduleSHA256, newInstance: newInstance})
}

// AOTLinked reports whether Checkers made with the default options run
// the checker translated to Go ahead of time: it is linked
// ([RegisterAOT]) and this system can stop a check running on it.
func AOTLinked() bool { return registeredAOT.Load() != nil && guest.CanInterrupt }

// aotCode is the translated checker module.
type aotCode struct {
	newInstance func(AOTImports) AOTInstance
	maxBytes    uint64
}

func (c *aotCode) close(context.Context) error { return nil }

func (c *aotCode) instantiate(ctx context.Context, stderr *guest.Stderr) (backend, error) {
	a := &aotInstance{Reservation: guest.Reservation{Max: c.maxBytes}, epoch: time.Now(), WASI: guest.WASI{Stderr: stderr}}
	// Not stopped by ctx: the memory is being reserved (a short, fixed
	// amount of work); ctx is looked at afterwards.
	err := a.run(context.WithoutCancel(ctx), func() {
		a.mod = c.newInstance(a)
		a.Mem = a.mod.Xmemory().Slice()
		a.mod.X_initialize()
	})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		a.close(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", runtime.ErrCancelled, context.Cause(ctx))
		}
		return nil, fmt.Errorf("monty: instantiate type checker: %w", err)
	}
	return a, nil
}

// aotInstance is one instance of the translated checker, and the imports
// that serve it. Its linear memory is a reservation: with guard pages
// (docs/building.md#guard-pages) all a wasm32 access can reach, accessible
// up to the memory's length, so that a stray access faults; without, the
// checker's memory limit, with every access's bounds checked. memory.grow
// past the limit fails, and a check that must stop (its context ends) is
// stopped by taking the reservation's access rights away, so that its next
// load or store faults (see run).
type aotInstance struct {
	guest.WASI        // the WASI calls but the clock and sched_yield; WASI.Mem is the linear memory
	guest.Reservation // behind *Mem
	mod               AOTInstance
	epoch             time.Time
}

// errInterrupted is the panic value of a check stopped by its context.
var errInterrupted = errors.New("interrupted")

// run calls f, the only way into the module, with faults turned into
// panics, and stops it when ctx ends. A panic inside it becomes an error:
// proc_exit and a stopped check a *sys.ExitError (the exit code, or
// sys.ExitCodeContextCanceled / ExitCodeDeadlineExceeded, as wazero
// reports them), a trap of the translated code "wasm error: ...". A fault
// inside the reservation is the check's interruption when ctx ended, and
// otherwise a stray access past linear memory's length (the trap "wasm
// error: out of bounds memory access", as on wazero). A fault outside the
// reservation (and past the nil page) is not the module's and crashes the
// process, as it would without this.
func (a *aotInstance) run(ctx context.Context, f func()) (err error) {
	interrupted := make(chan struct{})
	stopped := false
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		a.Interrupt()
	})
	defer func() {
		r := recover()
		f, fault := r.(interface{ Addr() uintptr })
		inside := fault && a.Contains(f.Addr())
		if fault && !inside && f.Addr() >= nilPage {
			guest.Crash(r) // not the module's memory
		}
		if !stop() {
			// ctx ended while f ran: the reservation is (being made)
			// unusable, whether or not f saw it.
			<-interrupted
			stopped = true
		}
		switch {
		case stopped:
			code := uint32(sys.ExitCodeContextCanceled)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				code = sys.ExitCodeDeadlineExceeded
			}
			err = sys.NewExitError(code)
		case r == nil:
		case inside && a.Guarded:
			err = a.trap(guest.ErrOutOfBounds)
		default:
			err = a.trap(r)
		}
	}()
	if ctx.Err() != nil {
		panic(errInterrupted)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	f()
	return nil
}

// trap describes a panic of the translated module like wazero describes
// the same trap.
func (a *aotInstance) trap(r any) error {
	switch r := r.(type) {
	case guest.Exit:
		return sys.NewExitError(uint32(r))
	case string:
		return errors.New("wasm error: " + r)
	case error:
		return fmt.Errorf("wasm error: %w", r)
	}
	return fmt.Errorf("wasm error: %v", r)
}

// nilPage bounds the addresses a nil dereference faults at: such a fault
// in the translated code is a trap, as it is without SetPanicOnFault.
const nilPage = 1 << 16

func (a *aotInstance) reserve(ctx context.Context, n uint32) (ptr uint32, err error) {
	err = a.run(ctx, func() { ptr = uint32(a.mod.Xchecker_reserve(int32(n))) })
	return ptr, err
}

func (a *aotInstance) call(ctx context.Context, op, n uint32) (packed uint64, err error) {
	err = a.run(ctx, func() { packed = uint64(a.mod.Xchecker_call(int32(op), int32(n))) })
	return packed, err
}

func (a *aotInstance) abiVersion(ctx context.Context) (v uint32, err error) {
	err = a.run(ctx, func() { v = uint32(a.mod.Xchecker_abi_version()) })
	return v, err
}

func (a *aotInstance) read(ptr, n uint32) ([]byte, bool) { return a.Span(uint64(ptr), uint64(n)) }

func (a *aotInstance) write(ptr uint32, b []byte) bool {
	dst, ok := a.Span(uint64(ptr), uint64(len(b)))
	copy(dst, b)
	return ok
}

func (a *aotInstance) close(context.Context) {
	a.Free(a.Mem)
	a.mod = nil
}

// Xclock_time_get serves the wall clock and a monotonic clock.
func (a *aotInstance) Xclock_time_get(id int32, _ int64, result int32) int32 {
	var t int64
	switch id {
	case 0:
		t = time.Now().UnixNano()
	case 1:
		t = int64(time.Since(a.epoch))
	default:
		return guest.ErrnoInval
	}
	return a.PutUint64(result, uint64(t))
}

// Xsched_yield has nothing to yield to: an instance runs on one goroutine.
func (a *aotInstance) Xsched_yield() int32 { return guest.ErrnoSuccess }
