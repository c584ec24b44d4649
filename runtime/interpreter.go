package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monty-go/monty/runtime/internal/guest"
	"github.com/monty-go/monty/runtime/internal/wire"
)

// Operation codes of monty_call (docs/abi.md).
const (
	opInfo         = 0
	opCompile      = 1
	opRun          = 2
	opStart        = 3
	opResume       = 4
	opREPLNew      = 5
	opFeed         = 6
	opDump         = 7
	opLoad         = 8
	opFree         = 9
	opContinuation = 10
	opMemory       = 11
	opSetCwd       = 12
	opDumpDelta    = 13
	opGlobalMarks  = 14
)

// Response status codes.
const (
	statusOK        = 0
	statusException = 1
	statusFailure   = 2
)

// clockJump is added to the instance's monotonic clock to cancel a run: the
// module always arms a time budget (ten years when the caller sets none),
// and a clock that leaps past it makes the interpreter stop with an
// uncatchable TimeoutError at its next check, a few microseconds later. The
// clock leaps again at every read until the call returns, so that a budget
// window opened after the first leap (Monty restarts its window after an
// inline sleep) also runs out; maxClockJumps keeps the sum inside int64.
const (
	clockJump     = int64(11 * 365 * 24 * time.Hour)
	maxClockJumps = 24
)

// Interpreter is one instance of the interpreter module, with its own
// memory. The programs, executions and REPLs it creates live inside it and
// share its limits and output settings.
//
// An Interpreter is not safe for concurrent use: use one per goroutine, or
// take them from a Pool. Close it when done.
type Interpreter struct {
	engine  *Engine
	backend *backend // nil for the engine's own check of a module
	inst    instance

	reqPtr, reqCap uint32
	req            wire.Writer
	resp           []byte
	reader         wire.Reader // over resp, returned by call

	limits Limits
	output output
	stderr guest.Stderr // what the guest itself writes to stderr (panic messages)

	jump        atomic.Int64 // added to the monotonic clock while cancelling
	clockReads  atomic.Int64
	interrupted atomic.Bool
	// interruptCall is what a call's context runs when it ends: interrupt,
	// then Done on interrupting, which call waits on before it reads
	// interrupted (made once, so that a call allocates no closure).
	interruptCall func()
	interrupting  sync.WaitGroup
	dead          error
	handles       map[uint32]struct{}
	// inCall: a call into the module is running (print callbacks run
	// inside it); closeAfter: Close was called during it.
	inCall, closeAfter bool
}

// NewInterpreter instantiates a fresh interpreter with DefaultLimits and
// output collected (see SetOutput).
func (e *Engine) NewInterpreter(ctx context.Context) (*Interpreter, error) {
	b, it, err := e.acquire()
	if err != nil {
		return nil, err
	}
	if it != nil {
		it.backend = b
		return it, nil
	}
	it, err = e.instantiate(ctx, b.code)
	if err != nil {
		e.release(b)
		return nil, err
	}
	it.backend = b
	return it, nil
}

// instantiate makes an interpreter from code, not yet counted.
func (e *Engine) instantiate(ctx context.Context, code module) (*Interpreter, error) {
	it := &Interpreter{engine: e, limits: DefaultLimits(), handles: map[uint32]struct{}{}}
	it.interruptCall = func() { it.interrupt(); it.interrupting.Done() }
	it.output.max = it.limits.outputCap()
	it.stderr.Max = 4096
	inst, err := code.instantiate(ctx, it)
	if err != nil {
		return nil, err
	}
	it.inst = inst
	return it, nil
}

// Close frees the instance and everything in it. Closing twice is harmless.
// Called from a print callback, while the module runs, it takes effect
// when the module returns, and the run fails with ErrDead.
func (it *Interpreter) Close(ctx context.Context) error {
	if it.inst == nil {
		return nil
	}
	if it.inCall {
		it.closeAfter = true
		return nil
	}
	err := it.destroy(ctx)
	it.engine.release(it.backend)
	return err
}

// destroy closes the module instance.
func (it *Interpreter) destroy(ctx context.Context) error {
	err := it.inst.close(ctx)
	it.inst = nil
	if it.dead == nil {
		it.dead = fmt.Errorf("%w: interpreter was closed", ErrDead)
	}
	return err
}

// Compiled reports whether the interpreter runs compiled machine code
// (false: wazero's interpreter engine, during a fast start; see
// [WithFastStart]).
func (it *Interpreter) Compiled() bool { return it.backend.code.machine() }

// Outdated reports whether the engine now makes interpreters that run
// faster code than this one (its fast start has finished compiling). A
// [Pool] discards outdated interpreters; a long-lived one can move its
// state over with a REPL dump.
func (it *Interpreter) Outdated() bool { return it.backend != it.engine.current() }

// Dead returns the error that killed the interpreter, or nil if it is usable.
func (it *Interpreter) Dead() error { return it.dead }

// SetLimits sets the limits for later calls.
func (it *Interpreter) SetLimits(l Limits) {
	it.limits = l
	it.output.max = l.outputCap()
}

// Limits returns the limits in force.
func (it *Interpreter) Limits() Limits { return it.limits }

// SetOutput streams print() output to stdout and stderr as it is produced
// (line by line). A nil stderr sends stderr text to stdout; both nil (the
// default) collects output for Output instead.
func (it *Interpreter) SetOutput(stdout, stderr io.Writer) {
	it.output.stdout, it.output.stderr, it.output.callback = stdout, stderr, nil
}

// SetPrintFunc delivers print() output to f as it is produced; nil restores
// collection.
func (it *Interpreter) SetPrintFunc(f PrintFunc) {
	it.output.stdout, it.output.stderr, it.output.callback = nil, nil, f
}

// Output returns the print() output collected since the last Run, Start or
// Feed began (both streams, in order), when no writer or callback is set.
func (it *Interpreter) Output() string { return it.output.collected.String() }

// MemoryUsage reports the bytes the interpreter's heap holds now, as
// Limits.MaxMemory counts them (everything allocated since the instance
// started, the heap of loaded state included).
func (it *Interpreter) MemoryUsage(ctx context.Context) (int64, error) {
	it.req.Reset()
	r, err := it.call(ctx, opMemory, 0)
	if err != nil {
		return 0, err
	}
	n, err := r.Uint()
	return int64(n), err
}

// printOutput serves the module's monty.print import: 1 when the output
// limit is reached, else 0.
func (it *Interpreter) printOutput(ctx context.Context, stream uint32, b []byte) uint32 {
	return it.output.write(Stream(stream), b, printFuncFrom(ctx))
}

func (it *Interpreter) nanotime() int64 {
	it.clockReads.Add(1)
	jump := it.jump.Load()
	if jump != 0 && jump < maxClockJumps*clockJump && it.interrupted.Load() {
		jump = it.jump.Add(clockJump)
	}
	return int64(time.Since(it.engine.epoch)) + jump
}

// nanosleep serves time.sleep inside Run: it sleeps in short steps so a
// cancelled context interrupts it.
func (it *Interpreter) nanosleep(ns int64) {
	deadline := time.Now().Add(time.Duration(ns))
	for !it.interrupted.Load() {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(left, 5*time.Millisecond))
	}
}

func (it *Interpreter) interrupt() {
	it.interrupted.Store(true)
	it.jump.Store(clockJump)
}

// writeLimits appends the limits array of a request; output is line
// buffered when it streams somewhere, including a WithPrintFunc of ctx.
// cancellable tells the module whether this call can be stopped by moving
// its clock (docs/abi.md): when it cannot, and no time limit is set, the
// module arms no time budget and reads no clock. Only a call that runs to
// its end within this request may say false: a run that pauses keeps the
// budget it started with through resumes whose contexts may be cancellable.
func (it *Interpreter) writeLimits(ctx context.Context, cancellable bool) {
	w := &it.req
	l := &it.limits
	w.Array(8)
	w.OptUint(uint64(max(l.MaxDuration, 0)))
	w.OptUint(uint64(max(l.MaxMemory, 0)))
	w.OptUint(uint64(max(l.MaxRecursion, 0)))
	w.Bool(it.output.streaming() || printFuncFrom(ctx) != nil)
	w.OptUint(uint64(l.valueCap()))
	w.OptUint(uint64(l.intBits()))
	w.Bool(cancellable)
	w.OptUint(uint64(max(l.MaxTurnDuration, 0)))
}

// releaseAbove is the request or response size past which the module's
// buffers are freed after a call: they would otherwise stay allocated
// inside the instance and count against MaxMemory.
const releaseAbove = 1 << 20

// releaseBuffers frees the module's request and response buffers.
func (it *Interpreter) releaseBuffers(ctx context.Context) {
	if err := it.inst.release(ctx); err != nil {
		it.kill(err)
		return
	}
	it.reqPtr, it.reqCap = 0, 0
	if cap(it.req.Buf) > releaseAbove {
		it.req.Buf = nil
	}
}

// withDeadline bounds ctx to MaxDuration of wall-clock time from start; a
// call it stops reports ErrTimeLimit rather than a cancellation.
func (it *Interpreter) withDeadline(ctx context.Context, start time.Time) (context.Context, context.CancelFunc) {
	if it.limits.MaxDuration <= 0 {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, start.Add(it.limits.MaxDuration), &timeLimitCause{limit: it.limits.MaxDuration})
}

// call sends it.req.Buf as operation op on handle and returns a reader
// positioned at the payload of a successful response, valid until the next
// call.
func (it *Interpreter) call(ctx context.Context, op uint32, handle uint32) (*wire.Reader, error) {
	if it.dead != nil {
		return nil, it.dead
	}
	if err := ctx.Err(); err != nil {
		return nil, stopError(ctx, nil)
	}
	req := it.req.Buf
	if uint32(len(req)) > it.reqCap {
		ptr, err := it.inst.reserve(ctx, uint32(len(req)))
		if err != nil {
			return nil, it.kill(err)
		}
		it.reqPtr, it.reqCap = ptr, uint32(len(req))
	}
	if len(req) > 0 && !it.inst.write(it.reqPtr, req) {
		return nil, it.kill(errors.New("request buffer outside memory"))
	}
	var stop func() bool
	if ctx.Done() != nil {
		it.interrupting.Add(1)
		stop = context.AfterFunc(ctx, it.interruptCall)
	}
	it.inCall = true
	packed, err := it.inst.call(ctx, op, handle, uint32(len(req)))
	it.inCall = false
	if stop != nil {
		if stop() {
			it.interrupting.Done() // it will not run
		}
		// An interrupt that has started finishes before its flag is read
		// below, rather than leaving it set for the next call (which would
		// then stop at once, as cancelled by a context that is not done).
		it.interrupting.Wait()
	}
	cancelled := it.interrupted.Load()
	if cancelled {
		it.interrupted.Store(false)
		it.jump.Store(0)
	}
	if it.closeAfter {
		it.closeAfter = false
		_ = it.Close(context.WithoutCancel(ctx))
		return nil, it.dead
	}
	if err != nil {
		return nil, it.kill(err)
	}
	b, ok := it.inst.read(uint32(packed>>32), uint32(packed))
	if !ok {
		return nil, it.kill(errors.New("response outside memory"))
	}
	var resp []byte
	if len(b) > releaseAbove {
		// A large response is copied for this call only, not kept for reuse.
		resp = bytes.Clone(b)
	} else {
		it.resp = append(it.resp[:0], b...)
		resp = it.resp
	}
	if len(req) > releaseAbove || len(b) > releaseAbove {
		it.releaseBuffers(context.WithoutCancel(ctx))
	}
	// The reader, like resp, is the interpreter's own and valid until the
	// next call.
	r := &it.reader
	r.Reset(resp)
	if err := r.ArrayOf(2); err != nil {
		return nil, err
	}
	status, err := r.Uint()
	if err != nil {
		return nil, err
	}
	switch status {
	case statusOK:
		if cancelled {
			// The code may have seen a sleep cut short: its result is not
			// trustworthy, so the call reports cancellation.
			return nil, stopError(ctx, nil)
		}
		return r, nil
	case statusException:
		pyErr, err := readException(r)
		if err != nil {
			return nil, err
		}
		if cancelled && pyErr.Limit == TimeLimit {
			return nil, stopError(ctx, pyErr)
		}
		return nil, pyErr
	case statusFailure:
		msg, err := r.Text()
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(msg, valueTooLarge) {
			return nil, fmt.Errorf("%w: the value is larger than the limit of %s; return a smaller one",
				ErrResultLimit, ByteSize(it.limits.valueCap()))
		}
		return nil, apiError(msg)
	}
	return nil, fmt.Errorf("%w: unknown status %d", wire.ErrMalformed, status)
}

// kill marks the interpreter dead after a trap.
func (it *Interpreter) kill(cause error) error {
	it.dead = &TrapError{Cause: cause, Stderr: it.stderr.String()}
	return it.dead
}

func readException(r *wire.Reader) (*Error, error) {
	if err := r.ArrayOf(5); err != nil {
		return nil, err
	}
	e := &Error{}
	var err error
	if e.Type, err = r.Text(); err != nil {
		return nil, err
	}
	if e.Message, e.HasMessage, err = r.OptText(); err != nil {
		return nil, err
	}
	n, err := r.Array()
	if err != nil {
		return nil, err
	}
	e.Traceback = make([]Frame, n)
	for i := range e.Traceback {
		f := &e.Traceback[i]
		if err := r.ArrayOf(7); err != nil {
			return nil, err
		}
		if f.Filename, err = r.Text(); err != nil {
			return nil, err
		}
		nums := [4]*int{&f.Line, &f.Column, &f.EndLine, &f.EndColumn}
		for _, p := range nums {
			v, err := r.Uint()
			if err != nil {
				return nil, err
			}
			*p = int(v)
		}
		if f.Name, _, err = r.OptText(); err != nil {
			return nil, err
		}
		if f.Source, _, err = r.OptText(); err != nil {
			return nil, err
		}
	}
	if e.Text, err = r.Text(); err != nil {
		return nil, err
	}
	limit, err := r.Uint()
	if err != nil {
		return nil, err
	}
	e.Limit = LimitKind(limit)
	return e, nil
}

// info returns the monty version the module reports.
func (it *Interpreter) info(ctx context.Context) (string, error) {
	it.req.Reset()
	r, err := it.call(ctx, opInfo, 0)
	if err != nil {
		return "", err
	}
	if err := r.ArrayOf(2); err != nil {
		return "", err
	}
	return r.Text()
}

// free releases a handle; errors are irrelevant to callers (the handle is gone either way).
func (it *Interpreter) free(handle uint32) {
	delete(it.handles, handle)
	if it.dead != nil || handle == 0 {
		return
	}
	it.req.Reset()
	_, _ = it.call(context.Background(), opFree, handle)
}
