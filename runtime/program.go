package runtime

import (
	"context"
	"fmt"
	"math"
	"math/big"
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
	policy    sandboxPolicy
}

// sandboxPolicy is the rest of the sandbox element (docs/abi.md): what
// upstream Monty's OsPolicy and CompileOptions offer beyond a zone and a
// directory. The zero value asks for nothing.
type sandboxPolicy struct {
	assert    *uint32          // assert annotation bytes; 0 turns them off
	fixed     *time.Time       // a frozen clock
	fixedZone *object.TimeZone // a fixed-offset local zone
	random    *randomStart
	elapsed   bool // process_time() reports the session's execution time
}

func (p *sandboxPolicy) set() bool {
	return p.assert != nil || p.fixed != nil || p.fixedZone != nil || p.random != nil || p.elapsed
}

// randomStart is where an unseeded random gets its state: the host (an
// os.urandom OS call), or a seed.
type randomStart struct {
	host bool
	seed object.Value
}

// seedKind is the sandbox element's code of a seed: 2-5 for an int, float,
// str or bytes (docs/abi.md).
func seedKind(seed object.Value) (uint64, error) {
	switch v := seed.(type) {
	case object.Int, object.BigInt:
		return 2, nil
	case object.Float:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0, fmt.Errorf("%w: a float random seed must be finite", ErrInvalidOption)
		}
		return 3, nil
	case object.Str:
		return 4, nil
	case object.Bytes:
		return 5, nil
	}
	return 0, fmt.Errorf("%w: a random seed is an int, float, str or bytes, not %s", ErrInvalidOption, object.Repr(seed))
}

// WithAssertAnnotations sets how a failed assert describes its operands:
// maxBytes of each operand's repr ("assert 'ab… == 'xy…"), or 0 for none
// (CPython's bare AssertionError). The default is 120 bytes.
func WithAssertAnnotations(maxBytes int) CompileOption {
	n := uint32(min(max(maxBytes, 0), math.MaxUint32))
	return func(c *compileConfig) { c.policy.assert = &n }
}

// WithFixedClock freezes every clock the code reads (date.today(),
// datetime.now(), the time module's clocks) at t, for reproducible runs.
// It cannot be combined with WithHostClock.
func WithFixedClock(t time.Time) CompileOption {
	return func(c *compileConfig) { c.policy.fixed = &t }
}

// WithFixedTimezone sets the sandbox's local zone to a fixed offset from UTC
// (with tz.Name, if any, as its name), instead of an IANA zone. It cannot
// be combined with WithTimezone.
func WithFixedTimezone(tz object.TimeZone) CompileOption {
	return func(c *compileConfig) { c.policy.fixedZone = &tz }
}

// WithRandomSeed seeds the random module as random.seed(seed) would, so
// that unseeded draws repeat from run to run: seed is an int (object.Int or
// object.BigInt), a finite object.Float, an object.Str or object.Bytes.
func WithRandomSeed(seed object.Value) CompileOption {
	return func(c *compileConfig) { c.policy.random = &randomStart{seed: seed} }
}

// WithHostRandom makes the random module's first unseeded draw ask the host
// for its state, as an os.urandom OS call for 2496 bytes.
func WithHostRandom() CompileOption {
	return func(c *compileConfig) { c.policy.random = &randomStart{host: true} }
}

// WithElapsedProcessTime makes time.process_time() and time.thread_time()
// report the execution time of the program or REPL so far (sleeps and time
// paused at the host excluded) instead of 0.
func WithElapsedProcessTime() CompileOption {
	return func(c *compileConfig) { c.policy.elapsed = true }
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

// compileOptions applies opts to the defaults and checks the outcome.
func compileOptions(opts []CompileOption) (compileConfig, error) {
	c := compileConfig{script: DefaultScriptName}
	for _, o := range opts {
		o(&c)
	}
	return c, c.check()
}

// check refuses options the module would refuse, before any call.
func (c *compileConfig) check() error {
	if c.cwd != "" && !strings.HasPrefix(c.cwd, "/") {
		return fmt.Errorf("%w: working directory %q is not an absolute path", ErrInvalidOption, c.cwd)
	}
	p := &c.policy
	if p.fixed != nil && c.hostClock {
		return fmt.Errorf("%w: WithFixedClock and WithHostClock cannot be combined", ErrInvalidOption)
	}
	if p.fixedZone != nil && c.timezone != "" {
		return fmt.Errorf("%w: WithFixedTimezone and WithTimezone cannot be combined", ErrInvalidOption)
	}
	if z := p.fixedZone; z != nil && (z.Offset <= -86400 || z.Offset >= 86400) {
		return fmt.Errorf("%w: a fixed time zone's offset must be within a day, not %ds", ErrInvalidOption, z.Offset)
	}
	if r := p.random; r != nil && !r.host {
		if _, err := seedKind(r.seed); err != nil {
			return err
		}
	}
	return nil
}

// sandboxed reports whether a request needs its optional last element,
// [timezone|null, cwd|null, policy?] (docs/abi.md); without it the module
// keeps UTC and "/", so requests stay those of modules that predate the
// element.
func (c *compileConfig) sandboxed() bool { return c.timezone != "" || c.cwd != "" || c.policy.set() }

func (c *compileConfig) writeSandbox(w *wire.Writer) {
	p := &c.policy
	if !p.set() {
		w.Array(2)
	} else {
		w.Array(3)
	}
	w.OptText(c.timezone, c.timezone != "")
	w.OptText(c.cwd, c.cwd != "")
	if !p.set() {
		return
	}
	// [assert|null, fixed_clock|null, fixed_zone|null, random|null, elapsed]
	w.Array(5)
	if p.assert != nil {
		w.Uint(uint64(*p.assert))
	} else {
		w.Null()
	}
	if p.fixed != nil {
		w.Array(2)
		_ = w.Value(object.Int(p.fixed.Unix()))
		w.Uint(uint64(p.fixed.Nanosecond() / 1000))
	} else {
		w.Null()
	}
	if z := p.fixedZone; z != nil {
		w.Array(2)
		_ = w.Value(object.Int(z.Offset))
		w.OptText(ptrOr(z.Name), z.Name != nil)
	} else {
		w.Null()
	}
	switch r := p.random; {
	case r == nil:
		w.Null()
	case r.host:
		w.Array(1)
		w.Uint(1)
	default:
		kind, _ := seedKind(r.seed) // checked by check
		w.Array(2)
		w.Uint(kind)
		switch v := r.seed.(type) {
		case object.Int:
			w.Bytes(signedLE(big.NewInt(int64(v))))
		case object.BigInt:
			w.Bytes(signedLE(v.Big))
		default:
			_ = w.Value(v) // float, str or bytes: checked by check
		}
	}
	w.Bool(p.elapsed)
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// signedLE is n in two's complement, little-endian, as short as it can be
// (what Rust's BigInt::from_signed_bytes_le reads).
func signedLE(n *big.Int) []byte {
	if n.Sign() == 0 {
		return []byte{0}
	}
	size := n.BitLen()/8 + 1
	out := make([]byte, size)
	v := new(big.Int).Set(n)
	if v.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), uint(size*8)))
	}
	b := v.Bytes() // big-endian magnitude, at most size bytes
	for i := range b {
		out[i] = b[len(b)-1-i]
	}
	return out
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
	c, err := compileOptions(opts)
	if err != nil {
		return nil, err
	}
	h, err := it.create(ctx, opCompile, &c, 4, func(w *wire.Writer) {
		w.Text(code)
		w.Text(c.script)
		w.Array(len(c.inputs))
		for _, n := range c.inputs {
			w.Text(n)
		}
		w.Bool(c.hostClock)
	})
	if err != nil {
		return nil, err
	}
	return it.newProgram(h, len(c.inputs)), nil
}

// create sends op, the request that makes a program or a REPL, and
// returns the handle the module made: fields writes the request's n
// leading fields, and the sandbox's element follows them when c sets one.
func (it *Interpreter) create(ctx context.Context, op uint32, c *compileConfig, n int, fields func(*wire.Writer)) (uint32, error) {
	w := &it.req
	w.Reset()
	if c.sandboxed() {
		n++
	}
	w.Array(n)
	fields(w)
	if c.sandboxed() {
		c.writeSandbox(w)
	}
	r, err := it.call(ctx, op, 0)
	if err != nil {
		return 0, err
	}
	return r.Uint32()
}

func (it *Interpreter) newProgram(h uint32, inputs int) *Program {
	it.handles[h] = struct{}{}
	return &Program{it: it, handle: h, inputs: inputs}
}

// Interpreter returns the interpreter holding the program.
func (p *Program) Interpreter() *Interpreter { return p.it }

func (p *Program) writeInputs(ctx context.Context, inputs []object.Value, cancellable bool) error {
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
	p.it.writeLimits(ctx, cancellable)
	return nil
}

// Run executes the program to completion and returns the value of its final
// expression (None if it ends with a statement). Code that calls a function
// the interpreter does not know raises NameError; use Start or a Host to
// provide functions.
func (p *Program) Run(ctx context.Context, inputs ...object.Value) (object.Value, error) {
	if p.it.limits.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = p.it.withDeadline(ctx, time.Now())
		defer cancel()
	}
	// A run cannot pause, so nothing but ctx (bounded by MaxDuration above)
	// can stop it: with neither, the module need not watch its clock.
	if err := p.writeInputs(ctx, inputs, ctx.Done() != nil); err != nil {
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
	if err := p.writeInputs(ctx, inputs, true); err != nil {
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
