package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime/internal/wire"
)

// Pause is what a paused Execution is waiting for: *FunctionCall,
// *NameLookup, *OSCall or *AwaitFutures.
type Pause interface{ isPause() }

// FunctionCall is a call from Python to a function the host provides (a
// name the host answered in a NameLookup with an object.Function, or an
// input of that type). Answer with Return, Raise, Pending (async) or
// NotFound.
type FunctionCall struct {
	Name   string
	Args   []object.Value
	Kwargs []object.Pair // keys are object.Str
	// CallID identifies the call; a Pending answer makes it a future that
	// AwaitFutures later lists by this id.
	CallID uint32
	// ObjectID is set for a method call on a host-backed object.
	ObjectID *object.UUID
	// EagerAwait is true when the call is awaited at once, so a host that
	// resolves it synchronously loses no concurrency.
	EagerAwait bool
}

// NameLookup asks the host for the value of a name Python could not find.
// Answer with Return (for example an object.Function to offer a host
// function), NotFound (NameError) or Raise.
type NameLookup struct {
	Name     string
	ObjectID *object.UUID
}

// OSCall is an operation on the outside world: files ("Path.read_text",
// "open", ...), the environment ("os.getenv", "os.environ"), clocks and
// sleeps ("time.sleep" as "system.sleep"), imports. Answer with Return,
// Raise or NotFound; an OSHandler does this for you.
type OSCall struct {
	Name       string
	Args       []object.Value
	Kwargs     []object.Pair
	CallID     uint32
	EagerAwait bool
}

// AwaitFutures means every Python task is waiting on futures the host
// created with Pending answers. Answer with Resolve for any non-empty
// subset of CallIDs.
type AwaitFutures struct {
	CallIDs []uint32
}

func (*FunctionCall) isPause() {}
func (*NameLookup) isPause()   {}
func (*OSCall) isPause()       {}
func (*AwaitFutures) isPause() {}

// Kwarg returns the keyword argument called name.
func (c *FunctionCall) Kwarg(name string) (object.Value, bool) { return kwarg(c.Kwargs, name) }

// Kwarg returns the keyword argument called name.
func (c *OSCall) Kwarg(name string) (object.Value, bool) { return kwarg(c.Kwargs, name) }

// Arg returns positional argument i, or else the keyword argument called
// name: how an OS function's parameter arrives either way.
func (c *OSCall) Arg(i int, name string) (object.Value, bool) {
	if i < len(c.Args) {
		return c.Args[i], true
	}
	return c.Kwarg(name)
}

// Str returns argument i (or keyword name, see Arg), a str or Path, as a
// Go string; the error says which argument is missing or of another type.
func (c *OSCall) Str(i int, name string) (string, error) {
	v, ok := c.Arg(i, name)
	if !ok {
		return "", fmt.Errorf("%s: missing argument %s", c.Name, name)
	}
	switch s := v.(type) {
	case object.Str:
		return string(s), nil
	case object.Path:
		return string(s), nil
	}
	return "", fmt.Errorf("%s: argument %s is %s, not str", c.Name, name, v.Kind())
}

func kwarg(kw []object.Pair, name string) (object.Value, bool) {
	for _, p := range kw {
		if k, ok := p.Key.(object.Str); ok && string(k) == name {
			return p.Value, true
		}
	}
	return nil, false
}

// Answer is the host's reply to a Pause. Build one with Return, Raise,
// Pending, NotFound, Resolve or Abort.
type Answer struct {
	mode    uint8
	value   object.Value
	exc     Exception
	futures []FutureResult
}

const (
	answerReturn   = 0
	answerRaise    = 1
	answerPending  = 2
	answerNotFound = 3
	answerFutures  = 4
	answerAbort    = 5
)

// Return answers with a value.
func Return(v object.Value) Answer { return Answer{mode: answerReturn, value: v} }

// Raise answers by raising excType(message) at the pause; Python code can
// catch it.
func Raise(excType, message string) Answer {
	return Answer{mode: answerRaise, exc: Exception{Type: excType, Message: message}}
}

// Pending answers a FunctionCall (or an asyncio.sleep OSCall) with a future
// the host resolves later through AwaitFutures.
func Pending() Answer { return Answer{mode: answerPending} }

// NotFound answers a NameLookup with NameError, a FunctionCall or OSCall
// with "not found" (NameError, or ModuleNotFoundError for imports).
func NotFound() Answer { return Answer{mode: answerNotFound} }

// Resolve answers AwaitFutures with results for some or all pending calls.
func Resolve(results ...FutureResult) Answer { return Answer{mode: answerFutures, futures: results} }

// Abort ends the execution with excType(message), which Python code cannot
// catch (for example when the host's call budget is spent).
func Abort(excType, message string) Answer {
	return Answer{mode: answerAbort, exc: Exception{Type: excType, Message: message}}
}

// FutureResult is the outcome of one pending call: a value, or an exception
// when Err is set.
type FutureResult struct {
	CallID uint32
	Value  object.Value
	Err    *Exception
}

// Execution is code in progress: a started Program or a REPL feed. While
// Pause returns non-nil it waits for Resume; once Done, Value holds the
// result. An Execution belongs to its Interpreter (not goroutine-safe).
type Execution struct {
	it      *Interpreter
	handle  uint32 // paused run; 0 when done or for REPL feeds
	repl    *REPL
	pause   Pause
	value   object.Value
	started time.Time // when Start or Feed began; zero for loaded executions
}

// Pause returns what the execution waits for, or nil when it is done.
func (e *Execution) Pause() Pause { return e.pause }

// Done reports whether the execution has finished successfully.
func (e *Execution) Done() bool { return e.pause == nil }

// Value is the result of a finished execution.
func (e *Execution) Value() object.Value { return e.value }

func (e *Execution) target() uint32 {
	if e.repl != nil {
		return e.repl.handle
	}
	return e.handle
}

// Resume answers the current pause and runs until the next pause or the
// end. A Python exception ends the execution and is returned as *Error (a
// REPL keeps its state and can be fed again).
func (e *Execution) Resume(ctx context.Context, a Answer) error {
	if e.pause == nil {
		return fmt.Errorf("%w: execution is not paused", ErrBadState)
	}
	w := &e.it.req
	w.Reset()
	w.Array(2)
	e.it.writeLimits(ctx, true) // the caps on values and integers hold on every resume
	if err := writeAnswer(w, a); err != nil {
		return err
	}
	r, err := e.it.call(ctx, opResume, e.target())
	if errors.Is(err, ErrBadState) {
		// The module refused the answer before using it: still paused.
		return err
	}
	if err != nil {
		e.finish()
		return e.it.outputErr(err)
	}
	if e.repl != nil {
		return e.readProgress(r)
	}
	return e.readRunProgress(r)
}

// finish marks the execution as over after an error.
func (e *Execution) finish() {
	if e.handle != 0 {
		delete(e.it.handles, e.handle)
		e.handle = 0
	}
	e.pause = nil
	if e.repl != nil {
		e.repl.exec = nil
	}
}

// Close abandons a paused execution. A REPL feed is aborted (its REPL stays
// usable); a paused run is freed.
func (e *Execution) Close(ctx context.Context) {
	if e.pause == nil {
		return
	}
	if e.repl != nil {
		_ = e.Resume(ctx, Abort("RuntimeError", "execution abandoned by the host"))
		return
	}
	e.it.free(e.handle)
	e.finish()
}

// Dump serialises the paused execution: for a REPL feed, the whole REPL
// with it. Load it with Interpreter.LoadExecution or LoadREPL.
func (e *Execution) Dump(ctx context.Context) ([]byte, error) {
	if e.pause == nil {
		return nil, fmt.Errorf("%w: only a paused execution can be dumped", ErrBadState)
	}
	if e.repl != nil {
		return e.it.dump(ctx, e.repl.handle, kindREPL)
	}
	return e.it.dump(ctx, e.handle, kindRun)
}

// LoadExecution restores a paused run dumped by Execution.Dump.
func (it *Interpreter) LoadExecution(ctx context.Context, dump []byte) (*Execution, error) {
	h, r, err := it.load(ctx, dump, kindRun)
	if err != nil {
		return nil, err
	}
	it.handles[h] = struct{}{}
	e := &Execution{it: it, handle: h}
	if err := e.readProgress(r); err != nil {
		return nil, err
	}
	return e, nil
}

func writeAnswer(w *wire.Writer, a Answer) error {
	switch a.mode {
	case answerReturn:
		w.Array(2)
		w.Uint(answerReturn)
		v := a.value
		if v == nil {
			v = object.None{}
		}
		return w.Value(v)
	case answerRaise, answerAbort:
		w.Array(3)
		w.Uint(uint64(a.mode))
		w.Text(a.exc.Type)
		w.Text(a.exc.Message)
	case answerPending, answerNotFound:
		w.Array(1)
		w.Uint(uint64(a.mode))
	case answerFutures:
		w.Array(2)
		w.Uint(answerFutures)
		w.Array(len(a.futures))
		for _, f := range a.futures {
			if f.Err != nil {
				w.Array(4)
				w.Uint(uint64(f.CallID))
				w.Bool(false)
				w.Text(f.Err.Type)
				w.Text(f.Err.Message)
				continue
			}
			w.Array(3)
			w.Uint(uint64(f.CallID))
			w.Bool(true)
			v := f.Value
			if v == nil {
				v = object.None{}
			}
			if err := w.Value(v); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: empty Answer (use Return, Raise, Pending, NotFound, Resolve or Abort)", ErrBadState)
	}
	return nil
}

// readRunProgress reads `[handle, progress]`.
func (e *Execution) readRunProgress(r *wire.Reader) error {
	if err := r.ArrayOf(2); err != nil {
		return err
	}
	h, err := r.Uint32()
	if err != nil {
		return err
	}
	if e.handle != 0 && e.handle != h {
		delete(e.it.handles, e.handle)
	}
	e.handle = h
	if h != 0 {
		e.it.handles[h] = struct{}{}
	}
	return e.readProgress(r)
}

// readProgress reads a progress item and updates the pause or value.
func (e *Execution) readProgress(r *wire.Reader) error {
	n, err := r.Array()
	if err != nil {
		return err
	}
	kind, err := r.Uint()
	if err != nil {
		return err
	}
	switch {
	case kind == 0 && n == 2:
		e.value, err = r.Value()
		e.finish()
		return err
	case kind == 1 && n == 7:
		c := &FunctionCall{}
		if c.Name, c.Args, c.Kwargs, c.CallID, err = readCall(r); err != nil {
			return err
		}
		if c.ObjectID, err = readUUID(r); err != nil {
			return err
		}
		if c.EagerAwait, err = r.Bool(); err != nil {
			return err
		}
		e.pause = c
	case kind == 2 && n == 3:
		c := &NameLookup{}
		if c.Name, err = r.Text(); err != nil {
			return err
		}
		if c.ObjectID, err = readUUID(r); err != nil {
			return err
		}
		e.pause = c
	case kind == 3 && n == 5:
		c := &OSCall{}
		if c.Name, c.Args, c.Kwargs, c.CallID, err = readCall(r); err != nil {
			return err
		}
		if c.EagerAwait, err = r.Bool(); err != nil {
			return err
		}
		e.pause = c
	case kind == 4 && n == 2:
		count, err := r.Array()
		if err != nil {
			return err
		}
		c := &AwaitFutures{CallIDs: make([]uint32, count)}
		for i := range c.CallIDs {
			if c.CallIDs[i], err = r.Uint32(); err != nil {
				return err
			}
		}
		e.pause = c
	default:
		return fmt.Errorf("%w: unknown progress kind %d", wire.ErrMalformed, kind)
	}
	return nil
}

// readCall reads the `name, [args], [kwargs], call_id` part of a call pause.
func readCall(r *wire.Reader) (name string, args []object.Value, kwargs []object.Pair, id uint32, err error) {
	if name, err = r.Text(); err != nil {
		return
	}
	if args, err = r.Values(); err != nil {
		return
	}
	if kwargs, err = r.Pairs(); err != nil {
		return
	}
	id, err = r.Uint32()
	return
}

func readUUID(r *wire.Reader) (*object.UUID, error) {
	if r.Null() {
		return nil, nil
	}
	b, err := r.Bytes()
	if err != nil {
		return nil, err
	}
	if len(b) != 16 {
		return nil, fmt.Errorf("%w: uuid of %d bytes", wire.ErrMalformed, len(b))
	}
	var id object.UUID
	copy(id[:], b)
	return &id, nil
}
