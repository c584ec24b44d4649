package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime/internal/wire"
)

// DefaultScriptName names code in tracebacks when no name is given.
const DefaultScriptName = "main.py"

// CompileOption configures Compile and NewREPL.
type CompileOption func(*compileConfig)

type compileConfig struct {
	script    string
	inputs    []string
	hostClock bool
	timezone  string // IANA name; "" for UTC
	cwd       string // absolute virtual path; "" for "/"
}

// WithScriptName names the code in tracebacks (default "main.py").
func WithScriptName(name string) CompileOption {
	return func(c *compileConfig) { c.script = name }
}

// WithInputs declares names that Run and Start bind to input values, in order.
func WithInputs(names ...string) CompileOption {
	return func(c *compileConfig) { c.inputs = names }
}

// WithHostClock makes the code ask the host for the date and time: every
// date.today(), datetime.now() and time.time()-style read becomes an OSCall
// ("date.today", "datetime.now", "time.time", ...) that a Clock handler
// answers. Without it the interpreter reads the system clock itself.
func WithHostClock() CompileOption {
	return func(c *compileConfig) { c.hostClock = true }
}

// WithTimezone sets the sandbox's local time zone, an IANA name such as
// "Europe/London" resolved against the tz database built into the module
// (not the host's): naive datetime.now() and date.today() read the local
// time there, and astimezone(), time.localtime(), time.timezone, time.tzname
// and %Z report it, daylight saving time included. The default is UTC. An
// unknown name makes Compile and NewREPL fail with ErrInvalidOption.
func WithTimezone(name string) CompileOption {
	return func(c *compileConfig) { c.timezone = name }
}

// WithCwd sets the sandbox's initial working directory, an absolute virtual
// path such as "/mnt" (default "/"): os.getcwd() reports it and relative
// paths in open(), os and pathlib calls resolve against it before they
// reach the OSHandler. Each run of a Program starts there; a REPL starts
// there and keeps whatever os.chdir leaves between snippets. A path that is
// not absolute makes Compile and NewREPL fail with ErrInvalidOption.
func WithCwd(dir string) CompileOption {
	return func(c *compileConfig) { c.cwd = dir }
}

func compileOptions(opts []CompileOption) compileConfig {
	c := compileConfig{script: DefaultScriptName}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// check refuses options the module would refuse, before any call.
func (c *compileConfig) check() error {
	if c.cwd != "" && !strings.HasPrefix(c.cwd, "/") {
		return fmt.Errorf("%w: working directory %q is not an absolute path", ErrInvalidOption, c.cwd)
	}
	return nil
}

// sandboxed reports whether a request needs its optional last element,
// [timezone|null, cwd|null] (docs/abi.md); without it the module keeps UTC
// and "/", so requests stay those of modules that predate the element.
func (c *compileConfig) sandboxed() bool { return c.timezone != "" || c.cwd != "" }

func (c *compileConfig) writeSandbox(w *wire.Writer) {
	w.Array(2)
	w.OptText(c.timezone, c.timezone != "")
	w.OptText(c.cwd, c.cwd != "")
}

// Program is compiled Python code held by an Interpreter. It can run any
// number of times, each run starting from fresh globals. It belongs to its
// Interpreter and shares its (lack of) goroutine safety.
type Program struct {
	it     *Interpreter
	handle uint32
	inputs int
}

// Compile parses and compiles code. Syntax errors come back as an *Error of
// type SyntaxError with the line in its traceback.
func (it *Interpreter) Compile(ctx context.Context, code string, opts ...CompileOption) (*Program, error) {
	c := compileOptions(opts)
	if err := c.check(); err != nil {
		return nil, err
	}
	w := &it.req
	w.Reset()
	if c.sandboxed() {
		w.Array(5)
	} else {
		w.Array(4)
	}
	w.Text(code)
	w.Text(c.script)
	w.Array(len(c.inputs))
	for _, n := range c.inputs {
		w.Text(n)
	}
	w.Bool(c.hostClock)
	if c.sandboxed() {
		c.writeSandbox(w)
	}
	r, err := it.call(ctx, opCompile, 0)
	if err != nil {
		return nil, err
	}
	h, err := r.Uint32()
	if err != nil {
		return nil, err
	}
	return it.newProgram(h, len(c.inputs)), nil
}

func (it *Interpreter) newProgram(h uint32, inputs int) *Program {
	it.handles[h] = struct{}{}
	return &Program{it: it, handle: h, inputs: inputs}
}

// Interpreter returns the interpreter holding the program.
func (p *Program) Interpreter() *Interpreter { return p.it }

func (p *Program) writeInputs(ctx context.Context, inputs []object.Value) error {
	if p.inputs >= 0 && len(inputs) != p.inputs {
		return fmt.Errorf("%w: program declares %d inputs, got %d values", ErrBadState, p.inputs, len(inputs))
	}
	w := &p.it.req
	w.Reset()
	w.Array(2)
	w.Array(len(inputs))
	for i, v := range inputs {
		if err := w.Value(v); err != nil {
			return fmt.Errorf("monty: input %d: %w", i, err)
		}
	}
	p.it.writeLimits(ctx)
	return nil
}

// Run executes the program to completion and returns the value of its final
// expression (None if it ends with a statement). Code that calls a function
// the interpreter does not know raises NameError; use Start or a Host to
// provide functions.
func (p *Program) Run(ctx context.Context, inputs ...object.Value) (object.Value, error) {
	ctx, cancel := p.it.withDeadline(ctx, time.Now())
	defer cancel()
	if err := p.writeInputs(ctx, inputs); err != nil {
		return nil, err
	}
	p.it.output.begin()
	r, err := p.it.call(ctx, opRun, p.handle)
	if err != nil {
		return nil, p.it.outputErr(err)
	}
	return r.Value()
}

// Start begins executing the program and returns at its first pause, or
// finished.
func (p *Program) Start(ctx context.Context, inputs ...object.Value) (*Execution, error) {
	if err := p.writeInputs(ctx, inputs); err != nil {
		return nil, err
	}
	p.it.output.begin()
	started := time.Now()
	r, err := p.it.call(ctx, opStart, p.handle)
	if err != nil {
		return nil, p.it.outputErr(err)
	}
	e := &Execution{it: p.it, started: started}
	if err := e.readRunProgress(r); err != nil {
		return nil, err
	}
	return e, nil
}

// Dump serialises the compiled program (see Interpreter.LoadProgram).
func (p *Program) Dump(ctx context.Context) ([]byte, error) {
	return p.it.dump(ctx, p.handle, kindProgram)
}

// Close frees the program inside the interpreter.
func (p *Program) Close() {
	p.it.free(p.handle)
	p.handle = 0
}

// LoadProgram restores a program dumped by Program.Dump, in this or any
// interpreter of the same module.
func (it *Interpreter) LoadProgram(ctx context.Context, dump []byte) (*Program, error) {
	h, _, err := it.load(ctx, dump, kindProgram)
	if err != nil {
		return nil, err
	}
	p := it.newProgram(h, -1)
	return p, nil
}

// outputErr reports a failed write to the caller's output writer, which
// otherwise would be lost.
func (it *Interpreter) outputErr(err error) error {
	if it.output.writeErr != nil {
		return fmt.Errorf("%w (writing output also failed: %v)", err, it.output.writeErr)
	}
	return err
}
