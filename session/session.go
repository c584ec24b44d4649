package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/wasm"
)

// DefaultMaxStateSize caps a session's stored state when Options.MaxStateSize is 0.
const DefaultMaxStateSize = 50 << 20

// DefaultMaxViewSize caps the JSON view of the state when Options.MaxViewSize
// is 0.
const DefaultMaxViewSize = 8 << 20

// Errors, for use with errors.Is.
var (
	// ErrBusy: the session is running another call. Calls on one session
	// never wait for each other and never interleave.
	ErrBusy = errors.New("session: busy with another call")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("session: closed")
)

// Options configure sessions.
type Options struct {
	// Store keeps the state between calls and processes. Required.
	Store store.Store
	// Engine runs the interpreters; nil means runtime.Default.
	Engine *runtime.Engine
	// Pool, when set, supplies warm interpreters (of Engine), so opening or
	// reloading a session skips the instantiation. A session closes its
	// interpreters rather than returning them: one that held a session's
	// state is not reused for another. A Manager sets up its own pool.
	Pool *runtime.Pool
	// SigningKey, when set, signs every stored blob with HMAC-SHA256 and
	// refuses to load a blob whose signature is missing or wrong.
	SigningKey []byte
	// VerifyKeys are further keys whose signatures are accepted when
	// reading (for example the key blobs were signed with before a key
	// change); new blobs are always signed with SigningKey.
	VerifyKeys [][]byte
	// MaxStateSize caps the stored blob (default DefaultMaxStateSize). A call
	// whose state would exceed it still returns its result; the state is not
	// saved and the previously saved state is kept.
	MaxStateSize int64
	// MaxViewSize caps the JSON text of the state's JSON view (default: the
	// smaller of MaxStateSize and DefaultMaxViewSize). The view is built
	// inside the sandbox with a memory budget of its own, a few times this
	// size; globals whose JSON does not fit are left out of the view
	// (Result.ViewOmitted) and kept in the dump.
	MaxViewSize int64
	// JSONOnly keeps only the JSON-serialisable public globals between calls
	// (functions, classes, modules and other values are dropped after every
	// call), for portable, inspectable state.
	JSONOnly bool
	// CaptureOnError saves the state left by a call that raised. By default
	// such a call leaves the session exactly as it was before the call.
	CaptureOnError bool
	// FreshOnCorrupt starts an empty session when the stored state cannot
	// be loaded: a damaged or truncated blob, one of another format, one
	// whose signature does not verify (written for another session or
	// signed with another key), or an entry the store itself cannot read
	// (store.ErrUnreadable). The state is always kept aside first
	// (Restore.QuarantinedAs says where); without this option, or when it
	// cannot be kept aside, Open fails instead with a *CorruptStateError.
	FreshOnCorrupt bool
	// Ephemeral turns persistence off: the session never reads or writes
	// the Store, and every call starts with an empty namespace (and empty
	// files); Result.NotSavedReason says so. Seed 004's
	// STATE_PERSISTENCE_ENABLED=false.
	Ephemeral bool
	// NoCompression stores dumps uncompressed.
	NoCompression bool
	// Limits apply to every call (zero value: runtime.DefaultLimits()).
	Limits runtime.Limits
	// Host provides host functions and OS access to the code; nil offers
	// none. Its calls are traced (telemetry.HostCallSpans) unless it has an
	// Observer of its own.
	Host *runtime.Host
	// Files, when set, gives the session a filesystem at /work whose files
	// are saved with its state (see Files); nil means no /work.
	Files *Files
	// Print, when set, receives print() output as it is produced instead of
	// collecting it in Result.Output.
	Print runtime.PrintFunc
	// TypeCheck, when set, type-checks the code of every Exec and ExecWith
	// call before it runs (see TypeCheck).
	TypeCheck *TypeCheck
	// Telemetry receives a span per execution, with child spans for host
	// calls, type checks, pauses, resumes and store operations, and the
	// metrics beside them; nil means telemetry.Default (the global
	// OpenTelemetry providers).
	Telemetry *telemetry.Telemetry
}

// maxViewSize is the budget of the JSON view: Options.MaxViewSize, or the
// state size cap (a larger view could not be stored anyway), at most
// DefaultMaxViewSize.
func (o *Options) maxViewSize() int64 {
	if o.MaxViewSize > 0 {
		return o.MaxViewSize
	}
	return min(o.maxStateSize(), DefaultMaxViewSize)
}

// readKeys are the keys a blob may be signed with: SigningKey first, then
// VerifyKeys; nil when blobs are not signed.
func (o *Options) readKeys() [][]byte {
	if o.SigningKey == nil {
		return nil
	}
	return append([][]byte{o.SigningKey}, o.VerifyKeys...)
}

func (o *Options) maxStateSize() int64 {
	if o.MaxStateSize > 0 {
		return o.MaxStateSize
	}
	return DefaultMaxStateSize
}

// Restore says how an opened session got its state.
type Restore struct {
	// Found is true when state was stored under the id.
	Found bool
	// FromJSON is true when the full dump could not be used (it was written
	// by another Monty version) and the session was rebuilt from its JSON view.
	FromJSON bool
	// Lost lists the globals the JSON view could not carry (functions,
	// classes, instances, ...) when FromJSON is true.
	Lost []string
	// QuarantinedAs is the id where an unloadable blob was kept aside.
	// When it is set the session started empty (Options.FreshOnCorrupt).
	QuarantinedAs string
	// Reason explains FromJSON or a quarantine.
	Reason string
	// Err is why the stored state could not be loaded, when QuarantinedAs
	// is set: it matches ErrCorrupt, and store.ErrUnreadable too when the
	// store could not read the entry at all.
	Err error
}

// Result is the outcome of one Exec.
type Result struct {
	// Value is the value of the final expression (None after a statement).
	Value object.Value
	// Output is what print() wrote, both streams in order (empty when
	// Options.Print streams it).
	Output string
	// Err is the Python exception that ended the code, if any.
	Err *runtime.Error
	// HasState, StateSize and StateHash describe the stored state after the
	// call (sha256 hex of the blob).
	HasState  bool
	StateSize int64
	StateHash string
	// Saved is true when this call stored new state. NotSavedReason says
	// why not when the code succeeded but the state was not stored.
	Saved          bool
	NotSavedReason string
	// ViewOmitted lists public globals left out of the JSON view because
	// their JSON text did not fit its budget (Options.MaxViewSize); the
	// dump keeps them in full.
	ViewOmitted []string
	// Paused is set when the run stopped at client tool calls
	// (ExecOptions.Tools) and was stored paused: Value is nil, and
	// Resume continues it.
	Paused *Paused
}

// Session is a Python REPL whose globals, functions, classes and instances
// persist between Exec calls, in the Store. It is safe for concurrent use in
// the sense that a second concurrent call fails at once with ErrBusy.
type Session struct {
	id   string
	opts Options
	eng  *runtime.Engine

	busy    atomic.Bool
	mu      sync.Mutex // guards the fields below for State/Info readers
	it      *runtime.Interpreter
	repl    *runtime.REPL
	version string // store version of the blob this state matches; "" if none
	saved   *blob  // last stored state
	info    store.Info
	closed  bool
	restore Restore
	// noticed is set once RestoreNotice has reported restore.
	noticed bool
	// tc is the live type check context (the saved one between calls;
	// nil while the session does not record one).
	tc *typecheck.Context
	// host serves the code's pauses: a copy of Options.Host, with /work
	// in front of its OS handler when the session has files, and
	// telemetry's host call spans as its Observer unless it has one.
	host *runtime.Host
	// files is /work (nil without Options.Files). Between calls it holds
	// the files of saved; it held those of filesOf (nil: none) when its
	// generation was filesGen.
	files    *runtime.MemFS
	filesOf  *blob
	filesGen uint64
	// filesCache holds the stored forms of /work's files as last saved or
	// loaded, so a save compresses only the files that changed.
	filesCache fileCache
	// run is the run paused at client tool calls, as saved (nil: none);
	// pending is what the call in progress records if it pauses.
	run     *activeRun
	pending *pausedRun
}

var moduleSum = sync.OnceValue(func() [32]byte { return sha256.Sum256(wasm.Module) })

// Open returns the session stored under id, or a new empty one.
func Open(ctx context.Context, id string, opts Options) (*Session, error) {
	if opts.Store == nil {
		return nil, errors.New("session: Options.Store is required")
	}
	if err := store.CheckID(id); err != nil {
		return nil, err
	}
	eng := opts.Engine
	if eng == nil {
		var err error
		if eng, err = runtime.Default(ctx); err != nil {
			return nil, err
		}
	}
	s := &Session{id: id, opts: opts, eng: eng}
	s.opts.Store = opts.Telemetry.Or().Store(opts.Store)
	if opts.Limits == (runtime.Limits{}) {
		s.opts.Limits = runtime.DefaultLimits()
	}
	h := runtime.Host{}
	if opts.Host != nil {
		h = *opts.Host
	}
	if h.Observer == nil {
		h.Observer = telemetry.HostCallSpans{}
	}
	if opts.Files != nil {
		s.files = newFilesMem(s.opts.fileLimits())
		s.filesGen = s.files.Generation()
		if h.OS != nil {
			h.OS = runtime.Chain{s.files, h.OS}
		} else {
			h.OS = s.files
		}
	}
	s.host = &h
	if err := s.load(ctx); err != nil {
		s.shutdown()
		return nil, err
	}
	return s, nil
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Restored reports how Open found the state.
func (s *Session) Restored() Restore { return s.restore }

// load fetches and restores the stored state, or starts empty.
func (s *Session) load(ctx context.Context) error {
	s.noticed = false
	if s.opts.Ephemeral {
		return s.fresh(ctx)
	}
	obj, err := s.opts.Store.Get(ctx, s.id)
	if errors.Is(err, store.ErrNotFound) {
		return s.fresh(ctx)
	}
	if errors.Is(err, store.ErrUnreadable) {
		// Damage to this entry, not an outage of the store.
		return s.salvage(ctx, err)
	}
	if err != nil {
		return err
	}
	s.restore.Found = true
	b, err := decodeBlob(obj.Data, s.opts.readKeys(), s.opts.Limits.MaxMemory)
	if err == nil {
		err = s.restoreBlob(ctx, b)
	}
	if errors.Is(err, runtime.ErrMemoryLimit) {
		// The state is intact but too large for this session's limit: it
		// stays stored as it is, for a caller with a larger limit.
		return fmt.Errorf("session %s: the stored state does not fit the memory limit, and is kept unchanged: %w", s.id, err)
	}
	if errors.Is(err, runtime.ErrNoSpace) {
		// Files written under larger limits: kept for a caller with those.
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	if errors.Is(err, ErrCorrupt) {
		return s.quarantine(ctx, obj.Data, err, "")
	}
	if err != nil {
		// Cancelled, no interpreter, a dead one: the blob is not to blame.
		return err
	}
	s.version, s.saved, s.info, s.tc = obj.Info.Version, b, obj.Info, b.TypeCheck
	return nil
}

// restoreBlob rebuilds the interpreter state and the files from a decoded
// blob.
func (s *Session) restoreBlob(ctx context.Context, b *blob) error {
	s.run = nil
	if err := s.restoreFiles(b); err != nil {
		return err
	}
	if err := s.newInterpreter(ctx); err != nil {
		return err
	}
	if b.Run != nil && (b.JSONOnly || s.opts.JSONOnly || b.MontyVersion != s.eng.MontyVersion()) {
		// Rebuilding from the JSON view would drop the run and let the
		// next call overwrite it: refuse, leaving the state stored.
		return fmt.Errorf("%w: run %s, paused by Monty %s, cannot be continued here (Monty %s, JSON-only %t); resume it where it was paused",
			ErrRunUnloadable, b.Run.ID, b.MontyVersion, s.eng.MontyVersion(), s.opts.JSONOnly)
	}
	if !b.JSONOnly && !s.opts.JSONOnly {
		if b.MontyVersion == s.eng.MontyVersion() {
			repl, paused, err := s.it.LoadREPL(ctx, b.Dump)
			if err == nil {
				s.repl = repl
				return s.adoptRun(b, paused)
			}
			if !errors.Is(err, runtime.ErrInvalidDump) {
				return blobFault(ctx, err, "the dump does not load")
			}
			if b.Run != nil {
				return fmt.Errorf("%w: run %s: its dump does not load here: %v", ErrRunUnloadable, b.Run.ID, err)
			}
			s.restore.Reason = "the dump could not be loaded: " + err.Error()
		} else {
			s.restore.Reason = fmt.Sprintf("the dump was written by Monty %s and this is Monty %s", b.MontyVersion, s.eng.MontyVersion())
		}
		s.restore.FromJSON = true
	}
	view, err := parseView(b.JSON)
	if err != nil {
		return err
	}
	if s.restore.FromJSON {
		for _, n := range b.Names {
			if _, ok := view.Get(object.Str(n)); !ok {
				s.restore.Lost = append(s.restore.Lost, n)
			}
		}
	}
	return blobFault(ctx, s.injectJSON(ctx, view), "the JSON view does not load")
}

// blobFault classifies an error met while restoring a decoded blob: a
// failure of the blob itself (ErrCorrupt, so the blob is kept aside) unless
// it is the caller's cancellation, a dead interpreter or the memory limit,
// which say nothing about the blob.
func blobFault(ctx context.Context, err error, what string) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, runtime.ErrCancelled) || errors.Is(err, runtime.ErrDead) ||
		errors.Is(err, runtime.ErrMemoryLimit) {
		// Not the blob's fault: a state too large for this caller's
		// memory limit is kept as it is.
		return err
	}
	return corrupt("%s: %v", what, err)
}

// quarantine keeps an unloadable blob aside, then fails or starts fresh.
// The copy is named after the blob's content, so meeting the same blob
// again (every call on a session until someone repairs it) keeps one copy.
// replace is the version a fresh start's first save replaces the original
// under ("": the stored version, as Stat reports it).
func (s *Session) quarantine(ctx context.Context, data []byte, cause error, replace string) error {
	sum := sha256.Sum256(data)
	qid := fmt.Sprintf("%s.corrupt.%x", s.id, sum[:8])
	if len(qid) > 200 {
		qid = fmt.Sprintf("corrupt.%x.%x", sha256.Sum256([]byte(s.id)), sum[:8])
	}
	if _, err := s.opts.Store.Put(ctx, qid, data, store.Cond{IfAbsent: true}); err != nil && !errors.Is(err, store.ErrConflict) {
		return &CorruptStateError{ID: s.id, Err: cause, KeepErr: err}
	}
	if !s.opts.FreshOnCorrupt {
		return &CorruptStateError{ID: s.id, QuarantinedAs: qid, Err: cause}
	}
	s.restore.QuarantinedAs = qid
	s.restore.Reason = cause.Error()
	s.restore.Err = cause
	// Starting empty: later saves replace the original, whose copy is kept.
	if replace == "" {
		if obj, err := s.opts.Store.Stat(ctx, s.id); err == nil {
			replace = obj.Version
		}
	}
	s.version = replace
	s.saved = nil
	return s.freshInterpreter(ctx)
}

func (s *Session) fresh(ctx context.Context) error {
	s.version, s.saved, s.tc = "", nil, nil
	return s.freshInterpreter(ctx)
}

func (s *Session) freshInterpreter(ctx context.Context) error {
	s.run = nil
	if err := s.restoreFiles(nil); err != nil {
		return err
	}
	if err := s.newInterpreter(ctx); err != nil {
		return err
	}
	repl, err := s.it.NewREPL(ctx, s.replOptions()...)
	s.repl = repl
	return err
}

// replOptions start a new REPL in /work when the session has files.
func (s *Session) replOptions() []runtime.CompileOption {
	if s.files == nil {
		return nil
	}
	return []runtime.CompileOption{runtime.WithCwd(FilesMount)}
}

func (s *Session) newInterpreter(ctx context.Context) error {
	if s.it != nil {
		_ = s.it.Close(ctx)
	}
	var it *runtime.Interpreter
	var err error
	if s.opts.Pool != nil {
		it, err = s.opts.Pool.Get(ctx)
	} else {
		it, err = s.eng.NewInterpreter(ctx)
	}
	if err != nil {
		return err
	}
	s.it, s.repl = it, nil
	return nil
}

// injectJSON makes a fresh REPL whose globals are the JSON view's values.
func (s *Session) injectJSON(ctx context.Context, view object.Dict) error {
	if s.repl != nil {
		s.repl.Close()
	}
	repl, err := s.it.NewREPL(ctx, s.replOptions()...)
	if err != nil {
		return err
	}
	s.repl = repl
	if len(view) == 0 {
		return nil
	}
	inputs := make([]runtime.Input, 0, len(view))
	for _, p := range view {
		inputs = append(inputs, runtime.Input{Name: string(p.Key.(object.Str)), Value: p.Value})
	}
	if _, err = repl.Run(ctx, "None", inputs...); err != nil {
		return err
	}
	// Nothing ran that could reach the memory limit: measure, as loading
	// a dump does.
	if limit := s.opts.Limits.MaxMemory; limit > 0 {
		used, err := s.it.MemoryUsage(ctx)
		if err != nil {
			return err
		}
		if used > limit {
			return &runtime.StateLimitError{Need: used, Limit: limit}
		}
	}
	return nil
}

func parseView(raw json.RawMessage) (object.Dict, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := object.FromJSON(raw)
	if err != nil {
		return nil, corrupt("JSON view: %v", err)
	}
	d, ok := v.(object.Dict)
	if !ok {
		return nil, corrupt("JSON view is not an object")
	}
	for _, p := range d {
		if _, ok := p.Key.(object.Str); !ok {
			return nil, corrupt("JSON view has a non-string key")
		}
	}
	return d, nil
}

// Exec runs code in the session and persists the resulting state. A Python
// exception is reported in Result.Err (error is nil); errors are for
// failures of the session itself: busy, closed, store unavailable, update
// conflicts (store.ErrConflict), a dead interpreter, cancellation.
func (s *Session) Exec(ctx context.Context, code string) (*Result, error) {
	return s.ExecWith(ctx, code)
}

// ExecWith is Exec with inputs: values bound as globals before code runs
// (they stay in the session like any other global).
func (s *Session) ExecWith(ctx context.Context, code string, inputs ...runtime.Input) (*Result, error) {
	return s.ExecOptions(ctx, code, ExecOptions{Inputs: inputs, TypeCheck: s.opts.TypeCheck})
}

// enter starts a call: it fails with ErrBusy while another runs, else
// holds s.mu (and busy) until the caller releases both.
func (s *Session) enter() error {
	if !s.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: session %s", ErrBusy, s.id)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.busy.Store(false)
		return ErrClosed
	}
	return nil
}

// ExecOptions is Exec with per-call options: inputs, and type checking
// before the code runs (a *typecheck.Error when the check finds problems:
// nothing runs and the state is unchanged).
func (s *Session) ExecOptions(ctx context.Context, code string, o ExecOptions) (res *Result, err error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
	ctx, span := s.opts.Telemetry.StartExecution(ctx, s.id, false)
	defer func() { span.End(outcomeOf(res, err)) }()
	var checked *typecheck.Result
	if o.TypeCheck != nil {
		var err error
		if checked, err = s.check(ctx, code, o.TypeCheck, o.Inputs, o.Tools); err != nil {
			return nil, err
		}
		if err := checked.Err(); err != nil {
			return nil, err
		}
	}
	inputs := o.Inputs
	if s.repl == nil || s.it == nil || s.it.Dead() != nil || s.it.Outdated() {
		// An earlier failure left no usable interpreter, or the engine runs
		// faster code since its fast start finished compiling: rebuild the
		// saved state (which the live state equals between calls).
		if err := s.rollback(ctx); err != nil {
			return nil, fmt.Errorf("session %s: restoring the saved state after an earlier failure: %w", s.id, err)
		}
	}
	if err := s.settleRun(ctx); err != nil {
		return nil, err
	}
	s.it.SetLimits(s.opts.Limits)
	s.it.SetPrintFunc(s.opts.Print)
	v, err := s.feed(ctx, code, inputs, o)
	return s.finishCall(ctx, code, v, err, s.opts.CaptureOnError)
}

// finishCall stores what a call (or a resume) left: the new state, the
// paused run, or, when it failed, the last saved state back (with
// captureErr, the state a Python exception left is stored instead).
func (s *Session) finishCall(ctx context.Context, code string, v object.Value, err error, captureErr bool) (*Result, error) {
	res := &Result{Value: v, Output: s.it.Output()}
	var pyErr *runtime.Error
	var suspended *runtime.Suspended
	switch {
	case errors.As(err, &suspended):
		res.Value = nil
		res.Paused = s.pause(suspended)
	case err == nil:
	case errors.As(err, &pyErr) && !errors.Is(err, runtime.ErrCancelled):
		res.Err = pyErr
		if !captureErr {
			s.describe(res)
			return res, s.rollback(ctx)
		}
	default:
		// Cancelled, host limit, dead interpreter: put the last saved state back.
		if rerr := s.rollback(ctx); rerr != nil {
			return res, errors.Join(err, rerr)
		}
		s.describe(res)
		return res, err
	}
	tc := s.nextContext(code)
	if res.Paused != nil {
		tc = s.tc // the code is not done yet
	}
	if res.Paused != nil {
		err = s.savePause(ctx, res, tc)
	} else {
		err = s.save(ctx, res, tc)
	}
	if err != nil || !res.Saved {
		// Not stored (store failure, conflict, size cap): the live state
		// goes back to what is stored, so that it never holds changes a
		// later call could save as if this one had succeeded.
		if rerr := s.rollback(ctx); rerr != nil {
			return res, errors.Join(err, rerr)
		}
	}
	return res, err
}

// outcomeOf is how a call that returned res and err ended, for its span.
func outcomeOf(res *Result, err error) telemetry.Outcome {
	var o telemetry.Outcome
	if res != nil {
		o.Saved, o.StateSize = res.Saved, res.StateSize
		if res.Paused != nil {
			o.RunID = res.Paused.RunID
		}
	}
	var checkErr *typecheck.Error
	switch {
	case err == nil && res.Paused != nil:
		o.Kind = telemetry.OutcomePaused
	case err == nil && res.Err != nil:
		o.Kind, o.ExceptionType = telemetry.OutcomeException, res.Err.Type
		if res.Err.Limit != runtime.NoLimit {
			o.Kind, o.Limit = telemetry.OutcomeLimit, res.Err.Limit.String()
		}
	case err == nil:
		o.Kind = telemetry.OutcomeOK
	case errors.As(err, &checkErr):
		o.Kind, o.Err = telemetry.OutcomeTypeError, err
	case runtime.LimitOf(err) != runtime.NoLimit:
		o.Kind, o.Limit, o.Err = telemetry.OutcomeLimit, runtime.LimitOf(err).String(), err
		var pyErr *runtime.Error
		if errors.As(err, &pyErr) {
			o.ExceptionType = pyErr.Type
		}
	case errors.Is(err, runtime.ErrCancelled) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		o.Kind, o.Err = telemetry.OutcomeCancelled, err
	default:
		o.Kind, o.Err = telemetry.OutcomeError, err
	}
	return o
}

// describe fills the state fields from the last stored blob.
func (s *Session) describe(res *Result) {
	res.HasState = s.saved != nil
	if res.HasState {
		res.StateSize, res.StateHash = s.info.Size, s.info.SHA256
	}
}

// rollback puts the interpreter back to the last saved state. It runs to
// completion even when ctx is cancelled: a cancelled call is exactly when
// it is needed.
func (s *Session) rollback(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if s.saved == nil {
		s.tc = nil
		return s.freshInterpreter(ctx)
	}
	if s.repl != nil {
		s.repl.Close()
		s.repl = nil
	}
	if s.it == nil || s.it.Dead() != nil || s.it.Outdated() {
		if err := s.newInterpreter(ctx); err != nil {
			return err
		}
	}
	s.restore = Restore{Found: true}
	s.tc = s.saved.TypeCheck
	return s.restoreBlob(ctx, s.saved)
}

// viewCode defines a helper and evaluates, at module level, to the public
// global names and the JSON text of an object holding the public globals
// that json.dumps accepts (Monty's own json module: no user code runs, NaN
// and infinities are refused, non-string keys become strings as in
// CPython). Only strings cross the boundary, so values that cannot cross it
// faithfully never do. Monty has no del statement, so the helpers stay in
// the session as the private globals __monty_view and __monty_view_one
// (redefined before every use, so a user binding of those names cannot
// change the view).
const viewCode = `def __monty_view(g):
    import json
    names = [k for k in g if not k.startswith('_')]
    parts = []
    for k in names:
        try:
            parts.append(json.dumps(k) + ': ' + json.dumps(g[k], allow_nan=False))
        except Exception:
            pass
    return names, '{' + ', '.join(parts) + '}'
def __monty_view_one(g, k):
    import json
    try:
        return json.dumps(k) + ': ' + json.dumps(g[k], allow_nan=False)
    except Exception:
        return None
__monty_view(locals())`

// viewOneCode is the JSON member of the global named by __monty_view_name,
// or None (run after viewCode has defined the helper).
const viewOneCode = `__monty_view_one(locals(), __monty_view_name)`

// snapshot computes the names and JSON view of the public globals. It runs
// to completion even when ctx is cancelled (the call it follows has
// already succeeded), under the call's time limit and a memory budget of
// its own: the heap as it is plus a few times the view's size cap, so a
// view of a huge structure is cut short instead of taking the host's
// memory. When the whole view does not fit, each global is tried on its
// own and those that do not fit are left out (omitted).
func (s *Session) snapshot(ctx context.Context) (names []string, view []byte, omitted []string, err error) {
	ctx = context.WithoutCancel(ctx)
	budget := s.opts.maxViewSize()
	used, err := s.it.MemoryUsage(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("session: reading globals: %w", err)
	}
	lim := s.opts.Limits
	lim.MaxMemory = used + 4*budget + 8<<20
	lim.MaxResult = 2*budget + 1<<20
	s.it.SetLimits(lim)
	defer s.it.SetLimits(s.opts.Limits)
	v, err := s.repl.Run(ctx, viewCode)
	if err != nil && !overBudget(err) {
		return nil, nil, nil, fmt.Errorf("session: reading globals: %w", err)
	}
	pair, _ := v.(object.Tuple)
	var text object.Str
	var list object.List
	if len(pair) == 2 {
		list, _ = pair[0].(object.List)
		text, _ = pair[1].(object.Str)
	}
	if err == nil && int64(len(text)) > budget {
		err = runtime.ErrResultLimit
	}
	if err != nil {
		// Too large as a whole: one global at a time.
		return s.snapshotEach(ctx, budget)
	}
	if list == nil || !json.Valid([]byte(text)) {
		return nil, nil, nil, fmt.Errorf("session: reading globals: unexpected %s", object.Repr(v))
	}
	return strs(list), []byte(text), nil, nil
}

// snapshotEach builds the view one global at a time, leaving out those
// whose JSON does not fit what is left of the budget.
func (s *Session) snapshotEach(ctx context.Context, budget int64) (names []string, view []byte, omitted []string, err error) {
	v, err := s.repl.Run(ctx, "[k for k in locals() if not k.startswith('_')]")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("session: reading globals: %w", err)
	}
	list, _ := v.(object.List)
	names = strs(list)
	var b bytes.Buffer
	b.WriteByte('{')
	for _, name := range names {
		m, err := s.repl.Run(ctx, viewOneCode, runtime.Input{Name: "__monty_view_name", Value: object.Str(name)})
		member, _ := m.(object.Str)
		switch {
		case overBudget(err) || (err == nil && int64(b.Len()+len(member)+2) > budget):
			omitted = append(omitted, name)
			continue
		case err != nil:
			return nil, nil, nil, fmt.Errorf("session: reading global %q: %w", name, err)
		case member == "":
			continue // None: not JSON-serialisable
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.WriteString(string(member))
	}
	b.WriteByte('}')
	if !json.Valid(b.Bytes()) {
		return nil, nil, nil, errors.New("session: reading globals: the JSON view is not valid JSON")
	}
	return names, b.Bytes(), omitted, nil
}

// overBudget reports an error of the view's own memory or size budget.
func overBudget(err error) bool {
	return errors.Is(err, runtime.ErrMemoryLimit) || errors.Is(err, runtime.ErrResultLimit)
}

// strs keeps the strings of a list.
func strs(list object.List) []string {
	out := make([]string, 0, len(list))
	for _, n := range list {
		if name, ok := n.(object.Str); ok {
			out = append(out, string(name))
		}
	}
	return out
}

// save persists the state after a call, with the type check context tc.
func (s *Session) save(ctx context.Context, res *Result, tc *typecheck.Context) error {
	if s.opts.Ephemeral {
		res.NotSavedReason = NotSavedEphemeral
		s.describe(res)
		return nil
	}
	names, view, omitted, err := s.snapshotUnlessPaused(ctx)
	if err != nil {
		return err
	}
	res.ViewOmitted = omitted
	b := &blob{MontyVersion: s.eng.MontyVersion(), ModuleSum: moduleSum(), Names: names, JSON: view, JSONOnly: s.opts.JSONOnly, TypeCheck: tc}
	if s.run != nil {
		b.Run = s.run.rec
	}
	filesGen, filesCache := s.filesSection(b)
	if !s.opts.JSONOnly {
		if b.Dump, err = s.repl.Dump(ctx); err != nil {
			return err
		}
	}
	data, err := b.encode(s.opts.SigningKey, !s.opts.NoCompression)
	if err != nil {
		return err
	}
	if int64(len(data)) > s.opts.maxStateSize() {
		res.NotSavedReason = fmt.Sprintf("state is %d bytes, over the %d-byte limit; the previously saved state is kept (the next call continues from it, or starts empty when there is none)", len(data), s.opts.maxStateSize())
		s.describe(res)
		return nil
	}
	cond := store.Cond{IfVersion: s.version, IfAbsent: s.version == ""}
	info, err := s.opts.Store.Put(ctx, s.id, data, cond)
	if err != nil {
		s.describe(res)
		if errors.Is(err, store.ErrConflict) {
			// Another writer got there first: ours is not stored, and the
			// live state no longer matches the store, so reload next time.
			_ = s.reload(ctx)
			return fmt.Errorf("session %s: %w: another process updated this session; this call's changes were not saved", s.id, err)
		}
		return err
	}
	s.version, s.saved, s.info, s.tc = info.Version, b, info, tc
	if s.files != nil {
		s.filesOf, s.filesGen, s.filesCache = b, filesGen, filesCache
	}
	res.Saved = true
	s.describe(res)
	if s.opts.JSONOnly {
		// Drop everything the JSON view does not carry.
		view, err := parseView(b.JSON)
		if err != nil {
			return err
		}
		return s.injectJSON(ctx, view)
	}
	return nil
}

// reload replaces the live state with what the store holds now.
func (s *Session) reload(ctx context.Context) error {
	s.restore = Restore{}
	return s.load(ctx)
}

// State returns the JSON view of the stored state: the public,
// JSON-serialisable globals as Go values (map[string]any, []any, string,
// float64/json.Number, bool, nil).
func (s *Session) State() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]any{}
	if s.saved != nil {
		dec := json.NewDecoder(bytes.NewReader(s.saved.JSON))
		dec.UseNumber()
		_ = dec.Decode(&out)
	}
	return out
}

// Globals lists the public global names of the stored state, sorted.
func (s *Session) Globals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved == nil {
		return nil
	}
	return slices.Sorted(slices.Values(s.saved.Names))
}

// Clear deletes the stored state and starts the session empty.
func (s *Session) Clear(ctx context.Context) error {
	if !s.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: session %s", ErrBusy, s.id)
	}
	defer s.busy.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.opts.Store.Delete(ctx, s.id); err != nil {
		return err
	}
	return s.fresh(ctx)
}

// Close frees the interpreter. The stored state stays.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.shutdown()
	return nil
}

func (s *Session) shutdown() {
	if s.it != nil {
		_ = s.it.Close(context.Background())
		s.it, s.repl = nil, nil
	}
}
