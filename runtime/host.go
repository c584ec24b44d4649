package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/monty-go/monty/object"
)

// DefaultMaxHostCalls bounds the host calls of one run when
// Limits.MaxHostCalls is 0.
const DefaultMaxHostCalls = 1000

// HostFunc is a Go function Python code can call. Returning an *Exception
// raises that exception type in Python; any other error raises RuntimeError
// with the error's text.
type HostFunc func(ctx context.Context, args []object.Value, kwargs []object.Pair) (object.Value, error)

// Function is a HostFunc registered with a Host.
type Function struct {
	Func HostFunc
	// Async makes a call return a future at once and run the function in its
	// own goroutine; Python awaits it, and asyncio.gather over several async
	// functions runs them concurrently.
	Async bool
	// Doc is the docstring Python sees.
	Doc string
	// External marks a function the host does not call: its caller
	// answers it, maybe in another process, later. Drive then stops with a
	// *Suspended error and leaves the execution paused (see Suspended).
	// Func is not used. An Async external function returns a future at
	// once, so that asyncio.gather collects several before the run stops.
	External bool
}

// Host answers the pauses of executions: it offers Functions by name,
// serves OS calls through OS, and sleeps for time.sleep and asyncio.sleep.
// A Host holds no per-run state and is safe for concurrent use once built;
// each Drive is independent.
type Host struct {
	// Functions callable from Python, by name.
	Functions map[string]Function
	// OS serves file, environment, clock and import calls; nil serves none
	// (sleeps are always served). A call no handler serves raises what
	// upstream Monty raises without one: PermissionError("Permission
	// denied: '<path>'") for a file operation, RuntimeError("'<name>' is not
	// supported in this environment") for the rest, ModuleNotFoundError for
	// an import.
	OS OSHandler
	// Values are further names Python can use without defining them, such
	// as host classes (a HostDefined object.ClassType) or constants;
	// Functions take precedence.
	Values map[string]object.Value
	// Objects answers attribute reads and method calls on host objects;
	// nil raises AttributeError for them. Both count as host calls
	// (Limits.MaxHostCalls, MaxHostTime).
	Objects ObjectHandler
	// Observer, when set, watches every call the Host makes of a host
	// function or a host object's method (package session/telemetry's
	// HostCallSpans traces them; a session sets it). Nil watches nothing
	// and costs nothing.
	Observer HostCallObserver
}

// HostCallObserver watches the calls a Host makes of host functions and
// host object methods, for tracing or metrics: the calls of Functions and
// of ObjectHandler methods, not External calls (the Host does not make
// them), OS calls or attribute reads. It must be safe for concurrent use:
// async calls run in goroutines of their own.
type HostCallObserver interface {
	// StartHostCall is called just before a function runs, in the
	// goroutine that runs it, with the context the call gets; async says
	// whether it runs as an async task, and call must not be changed. It
	// returns the context the function runs with (ctx, or one derived from
	// it, say carrying a span) and end, which the Host calls once the
	// function is over with its outcome: nil, the error it returned (an
	// *Exception when it raises one), or an error saying it panicked. A
	// nil end asks for no outcome.
	StartHostCall(ctx context.Context, call *FunctionCall, async bool) (context.Context, func(err error))
}

// Run starts p with inputs and drives it to the end.
func (h *Host) Run(ctx context.Context, p *Program, inputs ...object.Value) (object.Value, error) {
	e, err := p.Start(ctx, inputs...)
	if err != nil {
		return nil, err
	}
	return h.Drive(ctx, e)
}

// Feed runs a snippet on r and drives it to the end.
func (h *Host) Feed(ctx context.Context, r *REPL, code string, inputs ...Input) (object.Value, error) {
	e, err := r.Feed(ctx, code, inputs...)
	if err != nil {
		return nil, err
	}
	return h.Drive(ctx, e)
}

// drive is the state of one Drive.
type drive struct {
	h        *Host
	limits   Limits // the interpreter's, as the drive started
	ctx      context.Context
	calls    int
	spent    time.Duration
	results  chan FutureResult
	inflight int
	ready    map[uint32]FutureResult
	started  int             // async calls started
	running  sync.WaitGroup  // async call goroutines
	limit    *timeLimitCause // the interpreter's MaxDuration, if any
	deadline time.Time       // when it passes
	// stoppable is false when nothing but the run's own end can cancel
	// ctx: sync host calls then need no goroutine of their own.
	stoppable bool
	// external are the futures of External calls, which the caller
	// answers: by id, the call (nil for those made before this Drive).
	external map[uint32]*FunctionCall
}

// Drive answers e's pauses until it finishes, and returns its value. On
// error the execution is over (a REPL stays usable); async calls still
// running are cancelled, and Drive returns once they have returned (or
// after a short grace period for host functions that ignore cancellation).
//
// The interpreter's MaxDuration bounds the whole execution in wall-clock
// time from its Start or Feed: sleeps, host function calls and awaits
// count. A sleep that would end past it fails at once; a host function
// still running when it passes is abandoned (its context is cancelled and
// the run ends with ErrTimeLimit without waiting for it to return).
func (h *Host) Drive(ctx context.Context, e *Execution) (object.Value, error) {
	return h.drive(ctx, e, nil, e.started)
}

// Continue drives an execution that a Drive left suspended, once its
// caller has answered the pause (Execution.Resume): waiting are the ids
// of External futures still unanswered, which the code may await later.
// The limits start afresh: MaxDuration counts from the Continue (the time
// the run waited does not count), MaxHostCalls and MaxHostTime from zero.
func (h *Host) Continue(ctx context.Context, e *Execution, waiting []uint32) (object.Value, error) {
	return h.drive(ctx, e, waiting, time.Now())
}

func (h *Host) drive(ctx context.Context, e *Execution, waiting []uint32, start time.Time) (object.Value, error) {
	if start.IsZero() {
		start = time.Now()
	}
	ctx, cancelDeadline := e.it.withDeadline(ctx, start)
	defer cancelDeadline()
	stoppable := ctx.Done() != nil // a deadline, or a caller who may give up
	ctx, cancel := context.WithCancel(ctx)
	d := &drive{h: h, limits: e.it.limits, ctx: ctx, stoppable: stoppable, results: make(chan FutureResult, 16), ready: map[uint32]FutureResult{},
		external: make(map[uint32]*FunctionCall, len(waiting))}
	for _, id := range waiting {
		d.external[id] = nil
	}
	if lim := e.it.limits.MaxDuration; lim > 0 {
		d.limit, d.deadline = &timeLimitCause{limit: lim}, start.Add(lim)
	}
	defer func() {
		// Async calls the run left behind are cancelled; give them a
		// moment to return, so that they do not outlive the run.
		cancel()
		d.waitAsync(asyncGrace)
	}()
	for !e.Done() {
		a, stop := d.answer(e.Pause())
		var suspended *Suspended
		if errors.As(stop, &suspended) {
			return nil, suspended // e stays paused, for the caller to answer
		}
		if stop == nil && ctx.Err() != nil {
			// The deadline passed or the caller gave up while the host
			// was answering: the code must not go on.
			stop = stopError(ctx, nil)
			a = abortFor(stop)
		}
		rctx := ctx
		if stop != nil {
			// Deliver the abort even though ctx is done, so the execution
			// ends inside the module too (a REPL must not stay paused); a
			// short bound of its own still interrupts it.
			var cancelAbort context.CancelFunc
			rctx, cancelAbort = context.WithTimeout(context.WithoutCancel(ctx), abortGrace)
			defer cancelAbort()
		}
		if err := e.Resume(rctx, a); err != nil {
			if stop != nil {
				return nil, stop
			}
			return nil, err
		}
		if stop != nil {
			// The code completed despite the abort (it cannot catch it,
			// so this means it finished first): report the stop anyway.
			return nil, stop
		}
	}
	return e.Value(), nil
}

// abortGrace bounds the resume that delivers an abort to the module.
const abortGrace = time.Second

// abortFor is the answer that ends a run for a stop error: TimeoutError for
// the time limit, RuntimeError otherwise. Python code cannot catch it.
func abortFor(stop error) Answer {
	var pyErr *Error
	if errors.As(stop, &pyErr) {
		return Abort(pyErr.Type, pyErr.Message)
	}
	return Abort("RuntimeError", stop.Error())
}

func (d *drive) maxCalls() int {
	if n := d.limits.hostCalls(); n >= 0 {
		return n
	}
	return int(^uint(0) >> 1)
}

// answer computes the reply to one pause. A non-nil error means the answer
// aborts the run because a host limit was reached.
func (d *drive) answer(p Pause) (Answer, error) {
	switch p := p.(type) {
	case *NameLookup:
		if p.ObjectID != nil {
			return d.objectAttr(p)
		}
		if f, ok := d.h.Functions[p.Name]; ok {
			fn := object.Function{Name: p.Name}
			if f.Doc != "" {
				doc := f.Doc
				fn.Doc = &doc
			}
			return Return(fn), nil
		}
		if v, ok := d.h.Values[p.Name]; ok {
			return Return(v), nil
		}
		return NotFound(), nil
	case *FunctionCall:
		if err := d.count(); err != nil {
			return abortFor(err), err
		}
		if p.ObjectID != nil {
			return d.objectMethod(p)
		}
		f, ok := d.h.Functions[p.Name]
		switch {
		case !ok:
			return d.callValue(p)
		case f.External:
			return d.externalCall(f, p)
		}
		return d.callFunction(f, p)
	case *OSCall:
		if err := d.count(); err != nil {
			return abortFor(err), err
		}
		return d.osCall(p)
	case *AwaitFutures:
		return d.await(p)
	}
	return Abort("RuntimeError", "unknown pause"), nil
}

func (d *drive) count() error {
	d.calls++
	if d.calls > d.maxCalls() {
		return fmt.Errorf("%w: more than %d host calls in one run", ErrHostCallLimit, d.maxCalls())
	}
	if d.limits.MaxHostTime > 0 && d.spent > d.limits.MaxHostTime {
		return fmt.Errorf("%w: host calls took longer than %s in total", ErrHostCallLimit, d.limits.MaxHostTime)
	}
	return nil
}

// callCtx bounds one call by what is left of MaxHostTime.
func (d *drive) callCtx() (context.Context, context.CancelFunc) {
	if d.limits.MaxHostTime > 0 {
		return context.WithTimeout(d.ctx, d.limits.MaxHostTime-d.spent)
	}
	return d.ctx, func() {}
}

// callSync calls fn and waits for its answer. When the run can be stopped
// (a deadline or a cancellable context), fn runs in its own goroutine so
// that a host function ignoring its context cannot hold the run past its
// limit: it is abandoned and the run stops.
func (d *drive) callSync(fn func(context.Context) (object.Value, error)) (Answer, error) {
	v, err, stop := d.invoke(fn)
	switch {
	case stop != nil:
		return abortFor(stop), stop
	case err != nil:
		return raiseFor(err), nil
	}
	return Return(orNone(v)), nil
}

// callFunction runs a host function for a call: in its own goroutine,
// answering with a future, when it is async. (Also when the code awaits
// the call at once: Monty takes a plain value as the call's result, which
// `await` then refuses; the future is resolved at the await that follows.)
func (d *drive) callFunction(f Function, p *FunctionCall) (Answer, error) {
	call := func(ctx context.Context) (object.Value, error) {
		return f.Func(ctx, p.Args, p.Kwargs)
	}
	if d.h.Observer != nil {
		call = observed(d.h.Observer, p, f.Async, call)
	}
	if f.Async {
		d.startAsync(p.CallID, call)
		return Pending(), nil
	}
	return d.callSync(call)
}

// observed wraps the call fn makes for p in obs's StartHostCall and its
// end.
func observed(obs HostCallObserver, p *FunctionCall, async bool, fn func(context.Context) (object.Value, error)) func(context.Context) (object.Value, error) {
	return func(ctx context.Context) (v object.Value, err error) {
		ctx, end := obs.StartHostCall(ctx, p, async)
		if end == nil {
			return fn(ctx)
		}
		defer func() {
			if r := recover(); r != nil {
				end(panicError(r))
				panic(r) // safeCall turns it into the call's error
			}
			end(err)
		}()
		return fn(ctx)
	}
}

// invoke runs fn as callSync does and returns its result, or a non-nil
// stop when the run must end (its time limit, cancellation, MaxHostTime).
func (d *drive) invoke(fn func(context.Context) (object.Value, error)) (v object.Value, err, stop error) {
	ctx, cancel := d.callCtx()
	defer cancel()
	start := time.Now()
	if !d.stoppable {
		v, err = safeCall(ctx, fn)
	} else {
		type result struct {
			v   object.Value
			err error
		}
		done := make(chan result, 1)
		go func() {
			v, err := safeCall(ctx, fn)
			done <- result{v, err}
		}()
		select {
		case r := <-done:
			v, err = r.v, r.err
		case <-d.ctx.Done():
			d.spent += time.Since(start)
			return nil, nil, stopError(d.ctx, nil)
		}
	}
	d.spent += time.Since(start)
	if err != nil && d.limits.MaxHostTime > 0 && d.spent > d.limits.MaxHostTime && errors.Is(err, context.DeadlineExceeded) {
		return nil, nil, fmt.Errorf("%w: host calls took longer than %s in total", ErrHostCallLimit, d.limits.MaxHostTime)
	}
	return v, err, nil
}

func (d *drive) startAsync(id uint32, fn func(context.Context) (object.Value, error)) {
	d.inflight++
	d.started++
	ctx, cancel := d.callCtx()
	d.running.Add(1)
	go func() {
		defer d.running.Done()
		defer cancel()
		v, err := safeCall(ctx, fn)
		r := FutureResult{CallID: id, Value: orNone(v)}
		if err != nil {
			exc := exceptionFor(err)
			r.Err = &exc
		}
		select {
		case d.results <- r:
		case <-d.ctx.Done():
		}
	}()
}

// safeCall calls a host function, turning a panic into an error (raised
// in Python as RuntimeError): arguments the code chose must not crash the
// host, and a panic in a call's own goroutine could not be recovered by
// the caller of Drive.
func safeCall(ctx context.Context, fn func(context.Context) (object.Value, error)) (v object.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, panicError(p)
		}
	}()
	return fn(ctx)
}

// panicError is the error a host function's panic with p becomes.
func panicError(p any) error { return fmt.Errorf("host function panicked: %v", p) }

// asyncGrace bounds how long Drive waits, when a run ends, for the async
// host calls it cancelled (host functions should return when their context
// is cancelled; one that does not is left running).
const asyncGrace = 2 * time.Second

// waitAsync waits up to grace for the async calls still running.
func (d *drive) waitAsync(grace time.Duration) {
	if d.started == 0 {
		return // the common case: no goroutine, no timer
	}
	done := make(chan struct{})
	go func() {
		d.running.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// await waits until at least one of the awaited futures has a result, then
// resolves every awaited future that is ready.
func (d *drive) await(p *AwaitFutures) (Answer, error) {
	wanted := make(map[uint32]bool, len(p.CallIDs))
	for _, id := range p.CallIDs {
		wanted[id] = true
	}
	start := time.Now()
	defer func() { d.spent += time.Since(start) }()
	for {
		var out []FutureResult
		for id, r := range d.ready {
			if wanted[id] {
				out = append(out, r)
				delete(d.ready, id)
			}
		}
		if len(out) > 0 {
			return Resolve(out...), nil
		}
		if d.inflight == 0 {
			if s := d.suspendAwait(p); s != nil {
				return Answer{}, s
			}
			if d.awaitsExternal(p) {
				// suspendAwait refused: host results would be lost.
				return Abort("RuntimeError", "the code awaits calls its caller answers while results of the host's async calls wait to be awaited: await those first"), nil
			}
			return Abort("RuntimeError", "awaiting futures the host never started"), nil
		}
		select {
		case r := <-d.results:
			d.inflight--
			d.ready[r.CallID] = r
			// Collect whatever else is already done without blocking.
			for more := true; more; {
				select {
				case r := <-d.results:
					d.inflight--
					d.ready[r.CallID] = r
				default:
					more = false
				}
			}
		case <-d.ctx.Done():
			stop := stopError(d.ctx, nil)
			return abortFor(stop), stop
		}
	}
}

func orNone(v object.Value) object.Value {
	if v == nil {
		return object.None{}
	}
	return v
}

func exceptionFor(err error) Exception {
	var exc *Exception
	if errors.As(err, &exc) {
		return *exc
	}
	return Exception{Type: "RuntimeError", Message: err.Error()}
}

func raiseFor(err error) Answer {
	exc := exceptionFor(err)
	return Raise(exc.Type, exc.Message)
}
