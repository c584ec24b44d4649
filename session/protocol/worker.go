package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// Version is the protocol version this package speaks (monty-proto 1.4.0,
// the schema of pydantic-monty 1.4.0).
const Version = 6

// MinVersion is the oldest version served: version 5 peers send nothing
// version 6 reads differently (as upstream's worker, which serves both).
// A Configure declaring a version outside MinVersion..Version is refused
// with a FatalError.
const MinVersion = 5

// DefaultMaxSuspensions is the suspension budget reported when the parent
// sets none (the parent enforces it; the worker only echoes it).
const DefaultMaxSuspensions = 1000

// defaultMaxSleep caps one system sleep when the policy does not say.
const defaultMaxSleep = 10 * time.Second

// Outcome tells the caller of Worker.Handle what to do next.
type Outcome int

const (
	// Continue serving requests.
	Continue Outcome = iota
	// Shutdown was asked for and acknowledged: close the connection.
	Shutdown
	// Fatal: a FatalError was sent; close the connection.
	Fatal
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Engine runs the interpreter. When nil, NewEngine gives it at the
	// first request that needs an interpreter (runtime.Default when that is
	// nil too), so that a worker answers Configure, Reset and Shutdown
	// before its engine has loaded.
	Engine    *runtime.Engine
	NewEngine func(context.Context) (*runtime.Engine, error)
	// Interpreters, when set, gives the worker its interpreter (a warm pool);
	// the worker returns it on Close.
	Interpreters *runtime.Pool
	// Checker type-checks snippets of sessions configured with type_check
	// (typecheck.Default when nil, loaded at the first check).
	Checker *typecheck.Checker
	// Logger receives diagnostics (never the session's output).
	Logger *slog.Logger
	// Host answers some pauses inside the worker instead of the parent:
	// its Functions and Values (names the code looks up and calls), its
	// Objects (the host objects among its Values) and its OS handler (for
	// example operator mounts; a call it does not handle goes to the
	// parent). A server uses it for a profile's MCP servers and mounts. Nil
	// forwards every pause.
	Host *runtime.Host
	// Approve answers the calls of Host's methods that wait for a
	// person's approval (an External method of Host.Objects, as package
	// tools makes them): it returns the call's outcome once a person
	// decided, or an error the call raises (PermissionError when nobody
	// did in time). It runs while the feed is suspended at the call
	// (Live gives it). Nil: such a call raises PermissionError, there
	// being nobody to ask.
	Approve func(ctx context.Context, call *runtime.FunctionCall, async bool) (object.Value, error)
	// Restored, when set, is called with the configuration of a session
	// Load restored, before the load goes on: a server sets the session's
	// Host there (SetHost), which a feed loaded suspended at a call that
	// waits for approval needs to ask again.
	Restored func(cfg *pb.Configure)
}

// Worker serves one monty.v1 session: the requests of one parent, in
// order, over an interpreter of its own. It is the logic of `monty
// subprocess` and of each WebSocket connection of `monty serve`.
// A Worker is not safe for concurrent use: Handle one request at a time.
type Worker struct {
	opts WorkerOptions
	it   *runtime.Interpreter

	cfg  *pb.Configure // nil: no session
	repl *runtime.REPL
	exec *runtime.Execution // the suspended feed, if any
	cwd  string             // the last working directory a feed asked for

	checkCtx typecheck.Context
	stubs    map[string]string // module stubs the parent gave, by dotted path
	asked    map[string]bool   // top-level modules whose stubs were asked for
	// awaitingStubs is a feed waiting for module stubs before its check.
	awaitingStubs *pendingFeed
	pendingCode   string // the running feed's code, committed to checkCtx when it completes
	lost          error  // why the session's interpreter is gone (a trap)

	// settled holds results the parent gave for eagerly awaited calls,
	// delivered when the interpreter next waits on futures.
	settled map[uint32]runtime.FutureResult

	totalExec time.Duration
	feedExec  time.Duration

	out printer
}

// NewWorker returns a worker with no session; the first request is
// normally Configure or Load.
func NewWorker(opts WorkerOptions) *Worker {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{opts: opts}
}

// Close frees the worker's interpreter.
func (w *Worker) Close(ctx context.Context) {
	w.dropSession()
	if w.it != nil {
		if w.opts.Interpreters != nil && w.it.Dead() == nil {
			w.opts.Interpreters.Put(w.it)
		} else {
			_ = w.it.Close(ctx)
		}
		w.it = nil
	}
}

// Configured reports whether the worker holds a session.
func (w *Worker) Configured() bool { return w.cfg != nil }

// Started reports whether the session's interpreter state exists (after
// its first feed, or a load).
func (w *Worker) Started() bool { return w.repl != nil || w.lost != nil }

// Reset drops the session, as the Reset request does.
func (w *Worker) Reset() { w.dropSession() }

// SetHost replaces WorkerOptions.Host (a server sets it from the session's
// profile).
func (w *Worker) SetHost(h *runtime.Host) { w.opts.Host = h }

// Config returns the session's configuration (nil without a session).
func (w *Worker) Config() *pb.Configure { return w.cfg }

// Handle serves one request. Events go to send in order: zero or more
// Print events, then exactly one turn-ending event. send may be called
// from a timer goroutine for Print events while Handle runs, never after
// it returns. The error is for a failure of send only.
func (w *Worker) Handle(ctx context.Context, req *pb.ParentRequest, send func(*pb.ChildEvent) error) (Outcome, error) {
	var sendErr error // written under the printer's lock, read after stop
	w.out.start(func(ev *pb.ChildEvent) {
		if err := send(ev); err != nil && sendErr == nil {
			sendErr = err
		}
	}, w.printInterval())
	ev, outcome := w.handle(ctx, req)
	w.out.stop()
	if outcome == Continue && w.repl != nil {
		w.stamp(ev)
	}
	if err := send(ev); err != nil {
		return Fatal, err
	}
	if sendErr != nil {
		return Fatal, sendErr
	}
	return outcome, nil
}

func (w *Worker) printInterval() time.Duration {
	if w.cfg == nil || w.cfg.PrintFlushIntervalMs == nil {
		return DefaultPrintFlushInterval
	}
	return time.Duration(*w.cfg.PrintFlushIntervalMs) * time.Millisecond
}

// resourceLimits are the session's limits (none set when the parent sent none).
func (w *Worker) resourceLimits() *pb.ResourceLimits {
	if l := w.cfg.GetLimits(); l != nil {
		return l
	}
	return &pb.ResourceLimits{}
}

// stamp adds the session's clocks and budgets to a turn-ending event.
func (w *Worker) stamp(ev *pb.ChildEvent) {
	ev.TotalExecutionMicros = uint64(w.totalExec.Microseconds())
	ev.FeedExecutionMicros = uint64(w.feedExec.Microseconds())
	l := w.resourceLimits()
	ms := uint64(DefaultMaxSuspensions)
	if l.MaxSuspensions != nil {
		ms = *l.MaxSuspensions
	}
	ev.MaxSuspensions = &ms
	ev.MaxFeedDurationMicros = l.MaxFeedDurationMicros
	ev.MaxTurnDurationMicros = l.MaxTurnDurationMicros
	ev.MaxTotalSleepMicros = l.MaxTotalSleepMicros
}

// Violation is the Error event for a request that is valid protobuf but
// not valid now (no session, wrong state, an unknown call id): the session
// is unchanged and the parent may go on.
func Violation(format string, args ...any) *pb.ChildEvent {
	msg := "protocol violation: " + fmt.Sprintf(format, args...)
	return &pb.ChildEvent{Kind: &pb.ChildEvent_Error{Error: &pb.Error{Exception: &pb.RaisedException{ExcType: "RuntimeError", Message: &msg}}}}
}

// FatalEvent is the last event of a connection that cannot go on.
func FatalEvent(format string, args ...any) *pb.ChildEvent {
	return &pb.ChildEvent{Kind: &pb.ChildEvent_FatalError{FatalError: &pb.FatalError{Message: fmt.Sprintf(format, args...)}}}
}

func okEvent() *pb.ChildEvent { return &pb.ChildEvent{Kind: &pb.ChildEvent_Ok{Ok: &pb.Ok{}}} }

func errorEvent(excType, message string) *pb.ChildEvent {
	return &pb.ChildEvent{Kind: &pb.ChildEvent_Error{Error: &pb.Error{Exception: &pb.RaisedException{ExcType: excType, Message: &message}}}}
}

// checkVersion refuses a protocol version outside MinVersion..Version.
func checkVersion(v uint32) error {
	if v >= MinVersion && v <= Version {
		return nil
	}
	tip := "make sure you are using the correct client version"
	if v < MinVersion {
		tip = "try updating to a newer client version"
	}
	return fmt.Errorf("unsupported protocol version %d (server supports protocol versions %d to %d, %s)", v, MinVersion, Version, tip)
}

func (w *Worker) handle(ctx context.Context, req *pb.ParentRequest) (*pb.ChildEvent, Outcome) {
	switch k := req.Kind.(type) {
	case *pb.ParentRequest_Configure:
		if err := checkVersion(k.Configure.GetProtocolVersion()); err != nil {
			return FatalEvent("%s", err), Fatal
		}
		if w.cfg != nil {
			return Violation("Configure while a session already exists"), Continue
		}
		if err := checkConfig(k.Configure); err != nil {
			return errorEvent("ValueError", err.Error()), Continue
		}
		w.cfg = k.Configure
		if w.cfg.GetTypeCheck() {
			w.warmChecker(ctx)
		}
		return okEvent(), Continue
	case *pb.ParentRequest_Feed:
		return w.feed(ctx, k.Feed), Continue
	case *pb.ParentRequest_ResumeCall:
		return w.resumeCall(ctx, k.ResumeCall), Continue
	case *pb.ParentRequest_ResumeNameLookup:
		return w.resumeNameLookup(ctx, k.ResumeNameLookup), Continue
	case *pb.ParentRequest_ResumeFutures:
		return w.resumeFutures(ctx, k.ResumeFutures), Continue
	case *pb.ParentRequest_AbortFeed:
		return w.abort(ctx, k.AbortFeed), Continue
	case *pb.ParentRequest_Dump:
		return w.dump(ctx), Continue
	case *pb.ParentRequest_Load:
		return w.load(ctx, k.Load.GetState()), Continue
	case *pb.ParentRequest_Reset_:
		w.dropSession()
		return okEvent(), Continue
	case *pb.ParentRequest_Shutdown:
		return okEvent(), Shutdown
	case *pb.ParentRequest_InstallDependencies:
		return errorEvent("RuntimeError", "dependency installation is only supported by the CPython worker"), Continue
	}
	return Violation("request has no kind"), Continue
}

// checkConfig refuses settings the interpreter would refuse, with a
// message that names them, before the session exists.
func checkConfig(c *pb.Configure) error {
	if tz := c.GetOsPolicy().GetTimezone().GetFixed(); tz != nil && (tz.GetOffsetSeconds() <= -86400 || tz.GetOffsetSeconds() >= 86400) {
		return fmt.Errorf("OSPolicy: time zone offset %ds is not within a day", tz.GetOffsetSeconds())
	}
	if f := c.GetOsPolicy().GetFixed(); f != nil && f.GetMicrosecond() > 999_999 {
		return fmt.Errorf("OSPolicy: fixed datetime microsecond %d is out of range", f.GetMicrosecond())
	}
	if s := c.GetOsPolicy().GetSeed(); s != nil {
		if f, ok := s.GetValue().(*pb.RandomSeed_Float); ok && (math.IsNaN(f.Float) || math.IsInf(f.Float, 0)) {
			return errors.New("OSPolicy: a float random seed must be finite")
		}
	}
	return nil
}

func (w *Worker) dropSession() {
	if w.exec != nil {
		w.exec.Close(context.Background())
		w.exec = nil
	}
	if w.repl != nil {
		w.repl.Close()
		w.repl = nil
	}
	w.cfg, w.lost, w.cwd, w.pendingCode = nil, nil, "", ""
	w.checkCtx = typecheck.Context{}
	w.stubs, w.asked, w.awaitingStubs = nil, nil, nil
	w.settled = nil
	w.totalExec, w.feedExec = 0, 0
}

// interpreter returns the worker's interpreter, making one if needed.
func (w *Worker) interpreter(ctx context.Context) (*runtime.Interpreter, error) {
	if w.it != nil && w.it.Dead() == nil {
		return w.it, nil
	}
	if w.it != nil {
		_ = w.it.Close(ctx)
		w.it = nil
	}
	var err error
	switch {
	case w.opts.Interpreters != nil:
		w.it, err = w.opts.Interpreters.Get(ctx)
	default:
		e := w.opts.Engine
		if e == nil {
			newEngine := w.opts.NewEngine
			if newEngine == nil {
				newEngine = runtime.Default
			}
			if e, err = newEngine(ctx); err != nil {
				return nil, err
			}
			w.opts.Engine = e
		}
		w.it, err = e.NewInterpreter(ctx)
	}
	if err != nil {
		return nil, err
	}
	w.it.SetPrintFunc(w.out.write)
	return w.it, nil
}

// replOptions are the interpreter options the session's configuration
// asks for: its script name, OS policy and assert annotations.
func (w *Worker) replOptions(cwd string) []runtime.CompileOption {
	opts := []runtime.CompileOption{runtime.WithScriptName(w.scriptName())}
	p := w.cfg.GetOsPolicy()
	switch {
	case p.GetCallHost() != nil:
		opts = append(opts, runtime.WithHostClock())
	case p.GetFixed() != nil:
		f := p.GetFixed()
		opts = append(opts, runtime.WithFixedClock(time.Unix(f.GetUnixSeconds(), int64(f.GetMicrosecond())*1000)))
	}
	switch tz := p.GetTimezone(); {
	case tz.GetNamed() != "":
		opts = append(opts, runtime.WithTimezone(tz.GetNamed()))
	case tz.GetFixed() != nil:
		opts = append(opts, runtime.WithFixedTimezone(object.TimeZone{Offset: int(tz.GetFixed().GetOffsetSeconds()), Name: tz.GetFixed().Name}))
	}
	switch {
	case p.GetRandomCallHost() != nil:
		opts = append(opts, runtime.WithHostRandom())
	case p.GetSeed() != nil:
		opts = append(opts, runtime.WithRandomSeed(seedValue(p.GetSeed())))
	}
	if p.GetElapsed() != nil {
		opts = append(opts, runtime.WithElapsedProcessTime())
	}
	if n := w.cfg.AssertMessageAnnotations; n != nil {
		opts = append(opts, runtime.WithAssertAnnotations(int(*n)))
	}
	if cwd != "" {
		opts = append(opts, runtime.WithCwd(cwd))
	}
	return opts
}

// seedValue is a random seed from the wire as the value random.seed takes.
func seedValue(s *pb.RandomSeed) object.Value {
	switch v := s.GetValue().(type) {
	case *pb.RandomSeed_Int:
		return object.IntFromBig(fromSignedLE(v.Int))
	case *pb.RandomSeed_Float:
		return object.Float(v.Float)
	case *pb.RandomSeed_Str:
		return object.Str(v.Str)
	case *pb.RandomSeed_Bytes:
		return object.Bytes(v.Bytes)
	}
	return object.Int(0)
}

// fromSignedLE reads a two's complement little-endian integer.
func fromSignedLE(b []byte) *big.Int {
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	n := new(big.Int).SetBytes(be)
	if len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

func (w *Worker) scriptName() string {
	if n := w.cfg.GetScriptName(); n != "" {
		return n
	}
	return runtime.DefaultScriptName
}

// ensureREPL materialises the session's REPL at its first feed.
func (w *Worker) ensureREPL(ctx context.Context, cwd string) error {
	if w.repl != nil {
		return nil
	}
	it, err := w.interpreter(ctx)
	if err != nil {
		return err
	}
	repl, err := it.NewREPL(ctx, w.replOptions(cwd)...)
	if err != nil {
		return err
	}
	w.repl, w.cwd = repl, cwd
	return nil
}

// limits are the interpreter limits of the feed: its budget and each
// turn's, which the module keeps as Monty's own max_feed_duration (counted
// across the feed's turns, time suspended on the parent excluded) and
// max_turn_duration (reset at every resume), so that the TimeoutError names
// the budget that ran out, as upstream's worker does.
func (w *Worker) limits() runtime.Limits {
	l := runtime.DefaultLimits()
	l.MaxOutput = runtime.Unlimited // output streams to the parent as it is made
	cl := w.resourceLimits()
	if cl.MaxMemoryBytes != nil {
		l.MaxMemory = int64(min(*cl.MaxMemoryBytes, 1<<62))
		l.MaxResult = 0
	}
	if cl.MaxRecursionDepth != nil {
		l.MaxRecursion = int(min(*cl.MaxRecursionDepth, 1<<30))
	}
	if cl.MaxFeedDurationMicros != nil {
		l.MaxDuration = max(micros(*cl.MaxFeedDurationMicros), time.Microsecond)
	}
	if cl.MaxTurnDurationMicros != nil {
		l.MaxTurnDuration = max(micros(*cl.MaxTurnDurationMicros), time.Microsecond)
	}
	return l
}

func micros(us uint64) time.Duration {
	return time.Duration(min(us, uint64(1<<62)/1000)) * time.Microsecond
}

func (w *Worker) feed(ctx context.Context, f *pb.Feed) *pb.ChildEvent {
	switch {
	case w.cfg == nil:
		return Violation("session has not been configured")
	case w.exec != nil, w.awaitingStubs != nil:
		return Violation("Feed without a session ready for input")
	case w.lost != nil:
		return errorEvent("RuntimeError", "the session was lost: "+w.lost.Error()+"; send Reset to start a new one")
	}
	if f.Cwd != "" && !strings.HasPrefix(f.Cwd, "/") {
		return errorEvent("ValueError", fmt.Sprintf("cwd %q is not an absolute path", f.Cwd))
	}
	if err := w.ensureREPL(ctx, f.Cwd); err != nil {
		return w.failed(err)
	}
	inputs, ev := inputsOf(f)
	if ev != nil {
		return ev
	}
	if w.cfg.GetTypeCheck() && !f.SkipTypeCheck {
		if ev := w.askStubs(f, inputs); ev != nil {
			return ev
		}
	}
	return w.checkAndRun(ctx, f, inputs)
}

// checkAndRun type-checks a feed when the session asks for it, then runs it.
func (w *Worker) checkAndRun(ctx context.Context, f *pb.Feed, inputs []runtime.Input) *pb.ChildEvent {
	if w.cfg.GetTypeCheck() && !f.SkipTypeCheck {
		if ev := w.typeCheck(ctx, f.Code); ev != nil {
			return ev
		}
	}
	if f.Cwd != "" && f.Cwd != w.cwd {
		if ev := w.chdir(ctx, f.Cwd); ev != nil {
			return ev
		}
	}
	w.feedExec = 0
	w.pendingCode = f.Code
	return w.run(ctx, func() (*runtime.Execution, error) { return w.repl.Feed(ctx, f.Code, inputs...) })
}

// inputsOf decodes a feed's inputs, or returns the event refusing them.
func inputsOf(f *pb.Feed) ([]runtime.Input, *pb.ChildEvent) {
	roots := make([]uint32, len(f.Inputs))
	for i, in := range f.Inputs {
		roots[i] = in.GetValue()
	}
	values, err := DecodeValues(f.Values, roots...)
	switch {
	case errors.Is(err, ErrOutputOnly):
		return nil, errorEvent("RuntimeError", err.Error())
	case err != nil:
		return nil, Violation("invalid inputs: %v", err)
	}
	inputs := make([]runtime.Input, len(values))
	for i, v := range values {
		inputs[i] = runtime.Input{Name: f.Inputs[i].GetName(), Value: v}
	}
	return inputs, nil
}

// chdir moves the session to dir before a feed that asks for it.
func (w *Worker) chdir(ctx context.Context, dir string) *pb.ChildEvent {
	if err := w.repl.SetCwd(ctx, dir); err != nil {
		return w.failed(err)
	}
	w.cwd = dir
	return nil
}

// checker is the type checker of the worker's sessions.
func (w *Worker) checker(ctx context.Context) (*typecheck.Checker, error) {
	if w.opts.Checker != nil {
		return w.opts.Checker, nil
	}
	return typecheck.Default(ctx)
}

// warmChecker readies the type checker when a session that type-checks is
// configured: a process's first check loads the checker and analyses the
// standard library's stubs (half a second, more on a busy machine), and
// the client times a feed from when it sends it, with the feed's duration
// limit and a second of grace, so the first feed must not pay for it. The
// client waits for the Configure's answer under no such limit. A failure
// here is the first feed's to report.
func (w *Worker) warmChecker(ctx context.Context) {
	if checker, err := w.checker(ctx); err == nil {
		_, _ = checker.Check(ctx, typecheck.Request{Code: "pass\n"})
	}
}

func (w *Worker) typeCheck(ctx context.Context, code string) *pb.ChildEvent {
	checker, err := w.checker(ctx)
	if err != nil {
		return errorEvent("RuntimeError", "type checking is unavailable: "+err.Error())
	}
	format := formatOf(w.cfg.GetTypeCheckFormat())
	req := typecheck.Request{Code: code, Path: w.scriptName(), Stubs: w.cfg.GetTypeCheckStubs(), Modules: w.moduleStubs(),
		Format: format, Color: w.cfg.GetTypeCheckColor()}
	w.checkCtx.Apply(&req)
	res, err := checker.Check(ctx, req)
	if err != nil {
		return errorEvent("RuntimeError", "type checking failed: "+err.Error())
	}
	if !res.Clean() {
		return &pb.ChildEvent{Kind: &pb.ChildEvent_TypingError{TypingError: &pb.TypingError{Diagnostics: res.Text}}}
	}
	return nil
}

// formats are the checker's renderings of the wire's TypeCheckFormat
// (unset: Full).
var formats = map[pb.TypeCheckFormat]typecheck.Format{
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_CONCISE:    typecheck.Concise,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_AZURE:      typecheck.Azure,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_JSON:       typecheck.JSON,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_JSON_LINES: typecheck.JSONLines,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_RDJSON:     typecheck.RDJSON,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_PYLINT:     typecheck.Pylint,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_GITLAB:     typecheck.GitLab,
	pb.TypeCheckFormat_TYPE_CHECK_FORMAT_GITHUB:     typecheck.GitHub,
}

func formatOf(f pb.TypeCheckFormat) typecheck.Format {
	if out, ok := formats[f]; ok {
		return out
	}
	return typecheck.Full
}

// run executes one slice of the feed (its start or a resume), answers the
// pauses the worker serves itself (sleeps in zero mode, a fixed clock), and
// turns where it stopped into the turn-ending event.
func (w *Worker) run(ctx context.Context, step func() (*runtime.Execution, error)) *pb.ChildEvent {
	for {
		w.it.SetLimits(w.limits())
		start := time.Now()
		ex, err := step()
		took := time.Since(start)
		w.totalExec += took
		w.feedExec += took
		if err != nil {
			w.exec = nil
			return w.failed(err)
		}
		if ex.Pause() == nil {
			w.exec = nil
			return w.complete(ex.Value())
		}
		w.exec = ex
		if a, ok := w.answerLocally(ctx, ex.Pause()); ok {
			step = func() (*runtime.Execution, error) { return ex, ex.Resume(ctx, a) }
			continue
		}
		ev, err := w.suspension(ex.Pause())
		if err != nil {
			// Nothing the parent could answer: end the feed with the error.
			ex.Close(ctx)
			w.exec = nil
			return errorEvent("RuntimeError", err.Error())
		}
		return ev
	}
}

func (w *Worker) complete(v object.Value) *pb.ChildEvent {
	if w.pendingCode != "" && w.cfg.GetTypeCheck() {
		w.checkCtx.Commit(w.pendingCode)
	}
	w.pendingCode = ""
	arena, roots, err := EncodeValues(v)
	if err != nil {
		return errorEvent("RuntimeError", err.Error())
	}
	return &pb.ChildEvent{Kind: &pb.ChildEvent_Complete{Complete: &pb.Complete{Value: roots[0], Values: arena}}}
}

// failed turns an error that ended a feed into its event: a Python
// exception as upstream's worker reports it; a dead interpreter as an
// error that loses the session, never a crash of the worker.
func (w *Worker) failed(err error) *pb.ChildEvent {
	w.pendingCode = ""
	var pyErr *runtime.Error
	if errors.As(err, &pyErr) {
		return &pb.ChildEvent{Kind: &pb.ChildEvent_Error{Error: &pb.Error{Exception: raisedException(pyErr)}}}
	}
	if w.it != nil && w.it.Dead() != nil {
		w.opts.Logger.Warn("interpreter stopped; the session is lost", "err", err)
		w.lost = err
		w.repl, w.exec = nil, nil
		excType := "RuntimeError"
		var trap *runtime.TrapError
		if errors.As(err, &trap) && (errors.Is(err, runtime.ErrMemoryLimit) || strings.Contains(trap.Stderr, "allocation of")) {
			// Out of memory, as upstream's worker reports by dying.
			excType = "MemoryError"
		}
		return errorEvent(excType, "the interpreter stopped ("+err.Error()+"); the session is lost, send Reset to start a new one")
	}
	return errorEvent("RuntimeError", err.Error())
}

// raisedException is the wire form of a Python exception.
func raisedException(e *runtime.Error) *pb.RaisedException {
	out := &pb.RaisedException{ExcType: e.Type}
	if e.HasMessage {
		msg := e.Message
		out.Message = &msg
	}
	looks := framesShown(e.Text)
	for i, f := range e.Traceback {
		sf := &pb.StackFrame{
			Filename: f.Filename,
			Start:    &pb.CodeLoc{Line: uint32(max(f.Line, 0)), Column: uint32(max(f.Column, 0))},
			End:      &pb.CodeLoc{Line: uint32(max(f.EndLine, 0)), Column: uint32(max(f.EndColumn, 0))},
		}
		name := f.Name
		if name == "" {
			name = "<module>"
		}
		if i >= len(looks) || looks[i].named {
			sf.FrameName = &name
		}
		if f.Source != "" {
			src := f.Source
			sf.PreviewLine = &src
			sf.HideCaret = i < len(looks) && !looks[i].caret
		}
		sf.HideFrameName = i < len(looks) && !looks[i].named
		out.Traceback = append(out.Traceback, sf)
	}
	return out
}

// frameLook is how a formatted traceback shows one frame: whether its
// source line is underlined (Monty leaves a raise statement's bare) and
// whether the frame is named (a SyntaxError's is not). The runtime's frames
// do not carry these, its formatted text does.
type frameLook struct{ caret, named bool }

func framesShown(text string) []frameLook {
	lines := strings.Split(text, "\n")
	var out []frameLook
	for i, l := range lines {
		if !strings.HasPrefix(l, "  File \"") {
			continue
		}
		look := frameLook{named: strings.Contains(l, ", in ")}
		if i+2 < len(lines) && strings.HasPrefix(lines[i+1], "    ") {
			under := strings.TrimSpace(lines[i+2])
			look.caret = under != "" && strings.Trim(under, "~^") == ""
		}
		out = append(out, look)
	}
	return out
}

// answerLocally answers the pauses the session's policy keeps inside the
// worker.
func (w *Worker) answerLocally(ctx context.Context, p runtime.Pause) (runtime.Answer, bool) {
	if a, ok := w.hostAnswer(ctx, p); ok {
		return a, true
	}
	if af, ok := p.(*runtime.AwaitFutures); ok {
		var ready []runtime.FutureResult
		for _, id := range af.CallIDs {
			if r, ok := w.settled[id]; ok {
				ready = append(ready, r)
				delete(w.settled, id)
			}
		}
		return runtime.Resolve(ready...), len(ready) > 0
	}
	c, ok := p.(*runtime.OSCall)
	if !ok {
		return runtime.Answer{}, false
	}
	pol := w.cfg.GetOsPolicy()
	switch c.Name {
	case "system.sleep", "system.async_sleep":
		if pol.GetSleep().GetZero() != nil {
			return runtime.Return(object.None{}), true
		}
	}
	return runtime.Answer{}, false
}

// hostAnswer answers a pause from WorkerOptions.Host when it is the host's
// to answer.
func (w *Worker) hostAnswer(ctx context.Context, p runtime.Pause) (runtime.Answer, bool) {
	h := w.opts.Host
	if h == nil {
		return runtime.Answer{}, false
	}
	switch p := p.(type) {
	case *runtime.NameLookup:
		if p.ObjectID != nil {
			if !w.hostObject(*p.ObjectID) {
				return runtime.Answer{}, false
			}
			v, err := h.Objects.Attr(ctx, *p.ObjectID, p.Name)
			if errors.Is(err, runtime.ErrNotHandled) {
				return runtime.Raise("AttributeError", fmt.Sprintf("object has no attribute %q", p.Name)), true
			}
			return answerOf(v, err), true
		}
		if f, ok := h.Functions[p.Name]; ok {
			fn := object.Function{Name: p.Name}
			if f.Doc != "" {
				doc := f.Doc
				fn.Doc = &doc
			}
			return runtime.Return(fn), true
		}
		if v, ok := h.Values[p.Name]; ok {
			return runtime.Return(v), true
		}
	case *runtime.FunctionCall:
		var f runtime.Function
		switch {
		case p.ObjectID != nil:
			if !w.hostObject(*p.ObjectID) {
				return runtime.Answer{}, false
			}
			var err error
			if f, err = h.Objects.Method(ctx, *p.ObjectID, p.Name); err != nil {
				return answerOf(nil, err), true
			}
		default:
			var ok bool
			if f, ok = h.Functions[p.Name]; !ok {
				return runtime.Answer{}, false
			}
		}
		var v object.Value
		var err error
		switch {
		case f.External && p.ObjectID != nil:
			// A method that waits for a person's approval.
			v, err = w.approve(ctx, p, f.Async)
		case f.Func == nil || f.External:
			return runtime.Answer{}, false
		default:
			v, err = f.Func(ctx, p.Args, p.Kwargs)
		}
		// Called here, to its end: an async function's outcome becomes a
		// future that is already settled.
		if f.Async {
			w.settle(p.CallID, v, err)
			return runtime.Pending(), true
		}
		return answerOf(v, err), true
	case *runtime.OSCall:
		if h.OS == nil {
			return runtime.Answer{}, false
		}
		v, err := h.OS.HandleOS(ctx, p)
		if errors.Is(err, runtime.ErrNotHandled) {
			return runtime.Answer{}, false
		}
		return answerOf(v, err), true
	}
	return runtime.Answer{}, false
}

// approve answers call, of a host method that waits for a person's
// approval.
func (w *Worker) approve(ctx context.Context, call *runtime.FunctionCall, async bool) (object.Value, error) {
	if w.opts.Approve == nil {
		return nil, &runtime.Exception{Type: "PermissionError", Message: fmt.Sprintf(
			"%s waits for a person's approval, and this session has nobody to ask (it is not stored by a server); it was not called", call.Name)}
	}
	return w.opts.Approve(ctx, call, async)
}

// hostObject reports whether id is one of the host's objects (an instance
// or class among its Values), not one of the parent's.
func (w *Worker) hostObject(id object.UUID) bool {
	h := w.opts.Host
	if h.Objects == nil {
		return false
	}
	for _, v := range h.Values {
		switch v := v.(type) {
		case object.Instance:
			if v.ID == id || v.Class.ID == id {
				return true
			}
		case object.ClassType:
			if v.ID == id {
				return true
			}
		}
	}
	return false
}

// settle keeps the outcome of a call the worker made for a future.
func (w *Worker) settle(callID uint32, v object.Value, err error) {
	if w.settled == nil {
		w.settled = map[uint32]runtime.FutureResult{}
	}
	r := runtime.FutureResult{CallID: callID, Value: v}
	if err != nil {
		exc := exceptionOf(err)
		r.Err = &exc
	} else if v == nil {
		r.Value = object.None{}
	}
	w.settled[callID] = r
}

func exceptionOf(err error) runtime.Exception {
	var exc *runtime.Exception
	if errors.As(err, &exc) {
		return *exc
	}
	return runtime.Exception{Type: "RuntimeError", Message: err.Error()}
}

// answerOf is the answer for a host call's outcome.
func answerOf(v object.Value, err error) runtime.Answer {
	if err != nil {
		exc := exceptionOf(err)
		return runtime.Raise(exc.Type, exc.Message)
	}
	if v == nil {
		v = object.None{}
	}
	return runtime.Return(v)
}

// suspension is the event announcing a pause to the parent.
func (w *Worker) suspension(p runtime.Pause) (*pb.ChildEvent, error) {
	switch p := p.(type) {
	case *runtime.FunctionCall:
		vals := make([]object.Value, 0, len(p.Args)+2*len(p.Kwargs))
		vals = append(vals, p.Args...)
		for _, kw := range p.Kwargs {
			vals = append(vals, kw.Key, kw.Value)
		}
		arena, roots, err := EncodeValues(vals...)
		if err != nil {
			return nil, err
		}
		fc := &pb.FunctionCall{FunctionName: p.Name, Args: roots[:len(p.Args)], CallId: p.CallID, AllowEagerAwait: p.EagerAwait, Values: arena}
		for i := range p.Kwargs {
			at := len(p.Args) + 2*i
			fc.Kwargs = append(fc.Kwargs, &pb.NodePair{Key: roots[at], Value: roots[at+1]})
		}
		if p.ObjectID != nil {
			fc.ObjectId = uuidPB(*p.ObjectID)
		}
		return &pb.ChildEvent{Kind: &pb.ChildEvent_FunctionCall{FunctionCall: fc}}, nil
	case *runtime.NameLookup:
		nl := &pb.NameLookup{Name: p.Name}
		if p.ObjectID != nil {
			nl.ObjectId = uuidPB(*p.ObjectID)
		}
		return &pb.ChildEvent{Kind: &pb.ChildEvent_NameLookup{NameLookup: nl}}, nil
	case *runtime.OSCall:
		pol := w.cfg.GetOsPolicy()
		hostSleep := pol.GetSleep().GetCallHost() != nil
		call := p
		if !hostSleep && (p.Name == "system.sleep" || p.Name == "system.async_sleep") {
			call = w.cappedSleep(p)
		}
		oc, err := osCallEvent(call, hostSleep)
		if err != nil {
			return nil, err
		}
		return &pb.ChildEvent{Kind: &pb.ChildEvent_OsCall{OsCall: oc}}, nil
	case *runtime.AwaitFutures:
		ids := slices.Clone(p.CallIDs)
		slices.Sort(ids)
		return &pb.ChildEvent{Kind: &pb.ChildEvent_ResolveFutures{ResolveFutures: &pb.ResolveFutures{PendingCallIds: ids}}}, nil
	}
	return nil, fmt.Errorf("monty.v1: no wire form for a %T pause", p)
}

// cappedSleep shortens a system sleep to the policy's maximum.
func (w *Worker) cappedSleep(c *runtime.OSCall) *runtime.OSCall {
	limit := defaultMaxSleep
	if sys := w.cfg.GetOsPolicy().GetSleep().GetSystem(); sys != nil && sys.MaxMicros != nil {
		limit = micros(*sys.MaxMicros)
	}
	if secs := osFloat(c, 0, "delay"); secs <= limit.Seconds() {
		return c
	}
	capped := *c
	capped.Args = []object.Value{object.Float(limit.Seconds())}
	capped.Kwargs = nil
	return &capped
}

// suspended refuses an answer when no feed waits for one.
func (w *Worker) suspended(what string) error {
	if w.cfg == nil || w.exec == nil {
		return errors.New(what)
	}
	return nil
}

// resume continues the suspended feed with a.
func (w *Worker) resume(ctx context.Context, a runtime.Answer) *pb.ChildEvent {
	ex := w.exec
	return w.run(ctx, func() (*runtime.Execution, error) { return ex, ex.Resume(ctx, a) })
}

func (w *Worker) resumeCall(ctx context.Context, r *pb.ResumeCall) *pb.ChildEvent {
	if p := w.awaitingStubs; p != nil {
		if r.CallId != importStubsCallID {
			return Violation("ResumeCall call_id %d does not match %d", r.CallId, importStubsCallID)
		}
		if err := w.takeStubs(r); err != nil {
			return Violation("%s", err)
		}
		w.awaitingStubs = nil
		return w.checkAndRun(ctx, p.feed, p.inputs)
	}
	if err := w.suspended("ResumeCall without a suspended function/OS call"); err != nil {
		return Violation("%s", err)
	}
	var callID uint32
	var osCall *runtime.OSCall
	switch p := w.exec.Pause().(type) {
	case *runtime.FunctionCall:
		callID = p.CallID
	case *runtime.OSCall:
		callID, osCall = p.CallID, p
	default:
		return Violation("ResumeCall without a suspended function/OS call")
	}
	if r.CallId != callID {
		return Violation("ResumeCall call_id %d does not match %d", r.CallId, callID)
	}
	a, err := w.extAnswer(r.GetResult(), r.GetValues(), callID, osCall)
	if err != nil {
		return Violation("%s", err)
	}
	return w.resume(ctx, a)
}

// extAnswer turns an ExtFunctionResult into the runtime's answer.
func (w *Worker) extAnswer(res *pb.ExtFunctionResult, arena *pb.Arena, callID uint32, osCall *runtime.OSCall) (runtime.Answer, error) {
	switch k := res.GetKind().(type) {
	case *pb.ExtFunctionResult_ReturnValue:
		vs, err := DecodeValues(arena, k.ReturnValue)
		if err != nil {
			return runtime.Answer{}, err
		}
		return runtime.Return(vs[0]), nil
	case *pb.ExtFunctionResult_Error:
		return runtime.Raise(k.Error.GetExcType(), k.Error.GetMessage()), nil
	case *pb.ExtFunctionResult_Future:
		if k.Future != callID {
			return runtime.Answer{}, fmt.Errorf("future for call %d answers call %d", k.Future, callID)
		}
		if osCall != nil && !isAsyncSleep(osCall.Name) {
			return runtime.Answer{}, fmt.Errorf("a future cannot answer the OS call %s", osCall.Name)
		}
		return runtime.Pending(), nil
	case *pb.ExtFunctionResult_NotFound:
		return runtime.NotFound(), nil
	case *pb.ExtFunctionResult_NotHandled:
		if osCall == nil {
			return runtime.Answer{}, errors.New("not_handled answers OS calls only")
		}
		return runtime.Unhandled(osCall), nil
	}
	return runtime.Answer{}, errors.New("the result has no kind")
}

func (w *Worker) resumeNameLookup(ctx context.Context, r *pb.ResumeNameLookup) *pb.ChildEvent {
	if err := w.suspended("ResumeNameLookup without a suspended name lookup"); err != nil {
		return Violation("%s", err)
	}
	if _, ok := w.exec.Pause().(*runtime.NameLookup); !ok {
		return Violation("ResumeNameLookup without a suspended name lookup")
	}
	switch k := r.GetKind().(type) {
	case *pb.ResumeNameLookup_Value:
		vs, err := DecodeValues(r.GetValues(), k.Value)
		if err != nil {
			return Violation("%s", err)
		}
		return w.resume(ctx, runtime.Return(vs[0]))
	case *pb.ResumeNameLookup_Undefined:
		return w.resume(ctx, runtime.NotFound())
	case *pb.ResumeNameLookup_Error:
		return w.resume(ctx, runtime.Raise(k.Error.GetExcType(), k.Error.GetMessage()))
	}
	return Violation("ResumeNameLookup has no kind")
}

func (w *Worker) resumeFutures(ctx context.Context, r *pb.ResumeFutures) *pb.ChildEvent {
	if err := w.suspended("ResumeFutures without a suspended future resolution"); err != nil {
		return Violation("%s", err)
	}
	switch p := w.exec.Pause().(type) {
	case *runtime.FunctionCall:
		return w.settleEagerly(ctx, p.CallID, r)
	case *runtime.OSCall:
		// The parent awaits an asyncio.sleep itself (the client does, for
		// the system sleep of every mode but call_host's) and answers it
		// like an eagerly awaited call.
		if !isAsyncSleep(p.Name) {
			return Violation("ResumeFutures cannot answer the OS call %s: only an async sleep becomes a future", p.Name)
		}
		return w.settleEagerly(ctx, p.CallID, r)
	case *runtime.AwaitFutures:
		pending := map[uint32]bool{}
		for _, id := range p.CallIDs {
			pending[id] = true
		}
		if len(r.Results) == 0 {
			return Violation("ResumeFutures carries no results")
		}
		results := make([]runtime.FutureResult, 0, len(r.Results))
		for _, fr := range r.Results {
			if !pending[fr.GetCallId()] {
				return Violation("ResumeFutures for call %d, which is not pending", fr.GetCallId())
			}
			delete(pending, fr.GetCallId())
			res, ev := futureResult(fr, r.GetValues())
			if ev != nil {
				return ev
			}
			results = append(results, res)
		}
		return w.resume(ctx, runtime.Resolve(results...))
	}
	return Violation("ResumeFutures without a suspended future resolution")
}

// settleEagerly takes the outcome of the suspended call callID, which
// the parent awaited at once: the call becomes a future that is already
// settled, resolved at the next wait.
func (w *Worker) settleEagerly(ctx context.Context, callID uint32, r *pb.ResumeFutures) *pb.ChildEvent {
	if len(r.Results) != 1 || r.Results[0].GetCallId() != callID {
		return Violation("ResumeFutures answering call %d must carry exactly its result", callID)
	}
	fr, ev := futureResult(r.Results[0], r.GetValues())
	if ev != nil {
		return ev
	}
	if w.settled == nil {
		w.settled = map[uint32]runtime.FutureResult{}
	}
	w.settled[callID] = fr
	return w.resume(ctx, runtime.Pending())
}

// isAsyncSleep tells whether the OS call name is asyncio.sleep's, the one
// OS call whose answer may be a future.
func isAsyncSleep(name string) bool {
	return name == "system.async_sleep" || name == "asyncio.sleep"
}

// futureResult is the runtime's form of one future's outcome, or the
// violation event when it is neither a value nor an error.
func futureResult(fr *pb.FutureResult, arena *pb.Arena) (runtime.FutureResult, *pb.ChildEvent) {
	switch k := fr.GetResult().GetKind().(type) {
	case *pb.ExtFunctionResult_ReturnValue:
		vs, err := DecodeValues(arena, k.ReturnValue)
		if err != nil {
			return runtime.FutureResult{}, Violation("%s", err)
		}
		return runtime.FutureResult{CallID: fr.GetCallId(), Value: vs[0]}, nil
	case *pb.ExtFunctionResult_Error:
		return runtime.FutureResult{CallID: fr.GetCallId(), Err: &runtime.Exception{Type: k.Error.GetExcType(), Message: k.Error.GetMessage()}}, nil
	}
	return runtime.FutureResult{}, Violation("a future's result must be a value or an error")
}

func (w *Worker) abort(ctx context.Context, a *pb.AbortFeed) *pb.ChildEvent {
	exc := a.GetException()
	excType := exc.GetExcType()
	if excType == "" {
		excType = "RuntimeError"
	}
	if w.awaitingStubs != nil {
		// The feed had not started: it ends here.
		w.awaitingStubs = nil
		return errorEvent(excType, exc.GetMessage())
	}
	if err := w.suspended("AbortFeed without a suspended feed"); err != nil {
		return Violation("%s", err)
	}
	return w.resume(ctx, runtime.Abort(excType, exc.GetMessage()))
}
