package runtime

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime/internal/wire"
)

// REPL is an interactive session: each Feed runs a snippet against the
// globals, functions and classes left by earlier snippets. It belongs to its
// Interpreter (not goroutine-safe).
type REPL struct {
	it     *Interpreter
	handle uint32
	exec   *Execution // the feed in progress, if paused
}

// Input is a named value bound as a global before a snippet runs.
type Input struct {
	Name  string
	Value object.Value
}

// NewREPL creates an empty REPL (WithScriptName names it in tracebacks;
// WithHostClock, WithTimezone and WithCwd apply to every snippet).
func (it *Interpreter) NewREPL(ctx context.Context, opts ...CompileOption) (*REPL, error) {
	c, err := compileOptions(opts)
	if err != nil {
		return nil, err
	}
	h, err := it.create(ctx, opREPLNew, &c, 2, func(w *wire.Writer) {
		w.Text(c.script)
		w.Bool(c.hostClock)
	})
	if err != nil {
		return nil, err
	}
	it.handles[h] = struct{}{}
	return &REPL{it: it, handle: h}, nil
}

// Execution returns the feed in progress: the one a Drive left suspended,
// or a REPL loaded while paused; nil when the REPL is idle.
func (r *REPL) Execution() *Execution { return r.exec }

// Interpreter returns the interpreter holding the REPL.
func (r *REPL) Interpreter() *Interpreter { return r.it }

// Feed runs a snippet and returns at its first pause, or finished. A Python
// exception is returned as *Error; the REPL keeps its state (including any
// changes the snippet made before raising) and can be fed again.
func (r *REPL) Feed(ctx context.Context, code string, inputs ...Input) (*Execution, error) {
	if r.exec != nil {
		return nil, fmt.Errorf("%w: REPL is paused in a feed; resume or close that execution first", ErrBadState)
	}
	w := &r.it.req
	w.Reset()
	w.Array(3)
	w.Text(code)
	w.Array(2 * len(inputs))
	for _, in := range inputs {
		w.Text(in.Name)
		if err := w.Value(in.Value); err != nil {
			return nil, fmt.Errorf("monty: input %q: %w", in.Name, err)
		}
	}
	r.it.writeLimits(ctx, true)
	r.it.output.begin()
	started := time.Now()
	resp, err := r.it.call(ctx, opFeed, r.handle)
	if err != nil {
		return nil, r.it.outputErr(err)
	}
	e := &Execution{it: r.it, repl: r, started: started}
	r.exec = e
	if err := e.readProgress(resp); err != nil {
		return nil, err
	}
	return e, nil
}

// Run feeds a snippet that needs nothing from the host and returns its
// value. Unknown names raise NameError; a host function call fails. Use a
// Host to provide functions.
func (r *REPL) Run(ctx context.Context, code string, inputs ...Input) (object.Value, error) {
	var h Host
	return h.Feed(ctx, r, code, inputs...)
}

// Dump serialises the REPL with all its state (and its paused feed, if any).
func (r *REPL) Dump(ctx context.Context) ([]byte, error) {
	return r.it.dump(ctx, r.handle, kindREPL)
}

// SetCwd moves an idle REPL to another working directory, an absolute
// virtual path, as WithCwd does for a new one: os.getcwd() reports it and
// relative paths resolve against it from the next feed on. No code runs and
// nothing checks that the directory exists (as os.chdir would, with an OS
// call).
func (r *REPL) SetCwd(ctx context.Context, dir string) error {
	if r.exec != nil {
		return fmt.Errorf("%w: REPL is paused in a feed; resume or close that execution first", ErrBadState)
	}
	if !strings.HasPrefix(dir, "/") {
		return fmt.Errorf("%w: working directory %q is not an absolute path", ErrInvalidOption, dir)
	}
	w := &r.it.req
	w.Reset()
	w.Text(dir)
	_, err := r.it.call(ctx, opSetCwd, r.handle)
	return err
}

// Close frees the REPL inside the interpreter.
func (r *REPL) Close() {
	r.it.free(r.handle)
	r.handle = 0
}

// LoadREPL restores a REPL dumped by REPL.Dump or by Execution.Dump of a
// paused feed, in this or any interpreter of the same module. When the REPL
// was dumped mid-feed, the returned Execution is that feed, paused;
// otherwise it is nil.
func (it *Interpreter) LoadREPL(ctx context.Context, dump []byte) (*REPL, *Execution, error) {
	h, resp, err := it.load(ctx, dump, kindREPL)
	if err != nil {
		return nil, nil, err
	}
	return it.loadedREPL(h, resp)
}

// MontyDumpMagic starts Monty's own dump format (a 2-byte version follows).
const MontyDumpMagic = "MONTY\x00"

// LoadMontyREPL restores a REPL from Monty's own dump bytes, the format
// upstream Monty's worker answers a monty.v1 Dump with (they start with
// MontyDumpMagic), as LoadREPL does for this package's dumps. Monty's
// deserialiser trusts its input and these bytes carry no checksum: load
// only bytes from a producer you trust. Only the REPL is restored: what
// the dump holds for upstream's type checker is ignored.
func (it *Interpreter) LoadMontyREPL(ctx context.Context, dump []byte) (*REPL, *Execution, error) {
	if !bytes.HasPrefix(dump, []byte(MontyDumpMagic)) {
		return nil, nil, fmt.Errorf("%w: not one of Monty's own dumps (bad magic)", ErrInvalidDump)
	}
	h, resp, err := it.loadPayload(ctx, dump, kindREPL)
	if err != nil {
		return nil, nil, err
	}
	return it.loadedREPL(h, resp)
}

// loadedREPL wraps a REPL handle the module just restored.
func (it *Interpreter) loadedREPL(h uint32, resp *wire.Reader) (*REPL, *Execution, error) {
	it.handles[h] = struct{}{}
	repl := &REPL{it: it, handle: h}
	if resp.Null() {
		return repl, nil, nil
	}
	e := &Execution{it: it, repl: repl}
	repl.exec = e
	if err := e.readProgress(resp); err != nil {
		return nil, nil, err
	}
	return repl, e, nil
}

// Continuation says whether a snippet typed at an interactive prompt is
// ready to run.
type Continuation uint8

// Continuation states, from Monty's own parser.
const (
	// Complete: run it now (it may still be a syntax error).
	Complete Continuation = 0
	// Incomplete: an open bracket, string or decorator; read another line.
	Incomplete Continuation = 1
	// IncompleteBlock: a block was opened; read lines until a blank one.
	IncompleteBlock Continuation = 2
)

// Continuation reports whether code is complete as typed at a prompt.
func (it *Interpreter) Continuation(ctx context.Context, code string) (Continuation, error) {
	w := &it.req
	w.Reset()
	w.Text(code)
	r, err := it.call(ctx, opContinuation, 0)
	if err != nil {
		return Complete, err
	}
	v, err := r.Uint()
	return Continuation(v), err
}
