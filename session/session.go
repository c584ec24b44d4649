package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
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
	// Limits apply to every call: each zero field is that limit's default,
	// runtime.Unlimited none (runtime.Limits).
	Limits runtime.Limits
	// Host provides host functions and OS access to the code; nil offers
	// none. Open copies it: changes made to it afterwards are not seen.
	// Its calls are traced (telemetry.HostCallSpans) unless it has an
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

// check refuses options without a Store and an invalid id, and returns
// the engine the session runs on (Engine, or runtime.Default).
func (o *Options) check(ctx context.Context, id string) (*runtime.Engine, error) {
	if o.Store == nil {
		return nil, errors.New("session: Options.Store is required")
	}
	if err := store.CheckID(id); err != nil {
		return nil, err
	}
	if o.Engine != nil {
		return o.Engine, nil
	}
	return runtime.Default(ctx)
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
	// Replay is set when the call's idempotency key was used by an
	// earlier call of the same request (ExecOptions.Idempotency): nothing
	// ran, Replay holds that call's answer, and the state fields describe
	// the state it stored.
	Replay *Replay
}

// Session is a Python REPL whose globals, functions, classes and instances
// persist between Exec calls, in the Store. It is safe for concurrent use in
// the sense that a second concurrent call fails at once with ErrBusy.
//
// A Session runs code in its interpreter and hands the rest to two
// collaborators: its storedState (the state as stored, the files of /work)
// and its runs (the run paused at client tool calls). Between calls the
// live state equals the stored one; a call that is not saved puts the live
// state back (rollback).
type Session struct {
	id   string
	opts Options
	eng  *runtime.Engine
	// host serves the code's pauses: a copy of Options.Host, with /work
	// in front of its OS handler when the session has files, and
	// telemetry's host call spans as its Observer unless it has one.
	host *runtime.Host

	busy   atomic.Bool
	mu     sync.Mutex // guards the fields below (held by calls and readers)
	closed bool
	it     *runtime.Interpreter
	repl   *runtime.REPL
	// view is what the last JSON view of repl held (snapshot).
	view viewer
	// synced is set when Sync checked the state against the store since
	// the last call, which then need not check again.
	synced bool
	state  *storedState
	runs   runs
	// restore says how the state was last loaded; noticed is set once
	// RestoreNotice has reported it.
	restore Restore
	noticed bool
	// tc is the live type check context (the saved one between calls;
	// nil while the session does not record one).
	tc *typecheck.Context
	// decided are the decisions the resume in progress stores with its
	// outcome.
	decided []Decision
	// keyed is the idempotency of the call in progress (nil: none), whose
	// key its save stores.
	keyed *Idempotency
}

// Open returns the session stored under id, or a new empty one.
func Open(ctx context.Context, id string, opts Options) (*Session, error) {
	eng, err := opts.check(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &Session{id: id, opts: opts, eng: eng}
	s.opts.Store = opts.Telemetry.Or().Store(opts.Store)
	s.state = newStoredState(id, &s.opts, eng)
	s.host = s.hostFor(opts.Host)
	if err := s.load(ctx); err != nil {
		s.shutdown()
		return nil, err
	}
	return s, nil
}

// hostFor is the Host the session's code runs with, given Options.Host:
// a copy, with host call spans unless it has an Observer, and /work's
// files in front of its OS.
func (s *Session) hostFor(given *runtime.Host) *runtime.Host {
	h := runtime.Host{}
	if given != nil {
		h = *given
	}
	if h.Observer == nil {
		h.Observer = telemetry.HostCallSpans{}
	}
	if files := s.state.files; files != nil {
		if h.OS != nil {
			h.OS = runtime.Chain{files, h.OS}
		} else {
			h.OS = files
		}
	}
	return &h
}

// SetHost changes the Host of the calls from the next one on, as
// Options.Host does at Open (nil: none). A server that keeps a session
// open between requests gives each request its own Host this way.
func (s *Session) SetHost(h *runtime.Host) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.host = s.hostFor(h)
}

// SetLimits changes the limits of the calls from the next one on, as
// Options.Limits does at Open.
func (s *Session) SetLimits(l runtime.Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Limits = l
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Restored reports how Open found the state.
func (s *Session) Restored() Restore { return s.restore }

// RestoreNotice returns how the session got its state (as Restored), once:
// the first call after Open, or after the session reloaded its state from
// the store (which it does after losing a race to another writer), returns
// true; later calls return false until the next load. A caller that keeps
// a session open across many calls, as a Manager does, uses it to tell
// about a fresh start or a fallback once.
func (s *Session) RestoreNotice() (Restore, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noticed {
		return Restore{}, false
	}
	s.noticed = true
	return s.restore, true
}

// State returns the JSON view of the stored state: the public,
// JSON-serialisable globals as Go values (map[string]any, []any, string,
// float64/json.Number, bool, nil).
func (s *Session) State() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]any{}
	if saved := s.state.saved; saved != nil {
		dec := json.NewDecoder(bytes.NewReader(saved.JSON))
		dec.UseNumber()
		_ = dec.Decode(&out)
	}
	return out
}

// Globals lists the public global names of the stored state, sorted.
func (s *Session) Globals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.saved == nil {
		return nil
	}
	return slices.Sorted(slices.Values(s.state.saved.Names))
}

// Paused describes the session's paused run; nil when none.
func (s *Session) Paused() *Paused {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs.public(s.id)
}

// Files lists the session's files (not its directories) as stored, sorted
// by path. Like State, it waits for a running call to finish.
func (s *Session) Files() ([]FileInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mem, err := s.storedFiles()
	if err != nil {
		return nil, err
	}
	return listFiles(mem), nil
}

// ReadFile returns the contents of the session's file name ("out.csv" or
// "/work/out.csv") as stored; an error matching fs.ErrNotExist when there
// is no such file. Like State, it waits for a running call to finish.
func (s *Session) ReadFile(name string) ([]byte, error) {
	rel, err := filePath(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mem, err := s.storedFiles()
	if err != nil {
		return nil, err
	}
	return readFrom(mem, s.id, rel)
}

// storedFiles is /work as stored, for the readers, which hold s.mu.
func (s *Session) storedFiles() (*vfs.MemFS, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return s.state.storedFiles()
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
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	if res, err := s.startKeyed(o.Idempotency); res != nil || err != nil {
		return res, err
	}
	if err := s.checkState(o.IfState); err != nil {
		return nil, err
	}
	s.keyed = o.Idempotency
	defer func() { s.keyed = nil }()
	if o.TypeCheck != nil {
		checked, err := s.check(ctx, code, o.TypeCheck, o.Inputs, o.Tools)
		if err != nil {
			return nil, err
		}
		if err := checked.Err(); err != nil {
			return nil, err
		}
	}
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
	v, err := s.feed(ctx, code, o)
	return s.finishCall(ctx, code, v, err, s.opts.CaptureOnError)
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

// check runs the checker on code with the session's context, which it
// starts when the session does not record one yet.
func (s *Session) check(ctx context.Context, code string, tc *TypeCheck, inputs []runtime.Input, tools []ClientTool) (*typecheck.Result, error) {
	checker := tc.Checker
	if checker == nil {
		var err error
		if checker, err = typecheck.Default(ctx); err != nil {
			return nil, err
		}
	}
	if s.tc == nil {
		s.tc = seedContext(s.state.saved)
	}
	req := tc.request(code, inputs, tools, s.opts.Limits)
	s.tc.Apply(&req)
	done := s.opts.Telemetry.StartTypeCheck(ctx)
	res, err := checker.Check(ctx, req)
	problems := 0
	if res != nil {
		problems = len(res.Diagnostics)
	}
	done(problems, err)
	return res, err
}

// settleRun lets a call run when a run is paused: it first catches up
// with the store (the run may have been resumed elsewhere), then abandons
// the run if it expired, or refuses the call.
func (s *Session) settleRun(ctx context.Context) error {
	if s.runs.paused == nil {
		return nil
	}
	if err := s.syncRun(ctx); err != nil {
		return err
	}
	if s.runs.paused == nil {
		return nil
	}
	rec := s.runs.paused.rec
	if err := s.runs.settle(ctx, s.id); err != nil {
		return err
	}
	// An abandoned run whose claim lapsed (its holder died): the approved
	// calls it claimed may have run, which the next save records.
	s.decided = append(s.decided, rec.uncertainDecisions(s.id, time.Now().UTC())...)
	return nil
}

// Sync makes the session hold what the store holds now: another instance
// (or another Session of the same id) may have continued it since this one
// last loaded or saved. It checks the stored version and loads only when
// it moved. Every call does this by itself; a caller that inspects the
// session before a call (Paused, State) calls Sync first, and the call
// right after it does not check again.
func (s *Session) Sync(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
	if err := s.syncRun(ctx); err != nil {
		return err
	}
	s.synced = true
	return nil
}

// catchUp is Sync at the start of a call, unless Sync did it since the
// last call.
func (s *Session) catchUp(ctx context.Context) error {
	if s.synced {
		s.synced = false
		return nil
	}
	return s.syncRun(ctx)
}

// syncRun reloads the state when the store holds a newer one: another
// session of the same id (in this process or another) saved since, so
// what this one holds is not the session any more.
func (s *Session) syncRun(ctx context.Context) error {
	if s.opts.Ephemeral {
		return nil // nothing is stored for it
	}
	changed, err := s.state.changed(ctx)
	if err != nil || !changed {
		return err
	}
	return s.reload(ctx)
}

// feed runs code, with the client tools of o as External functions.
func (s *Session) feed(ctx context.Context, code string, o ExecOptions) (object.Value, error) {
	// What a run that pauses records (the Host may have External
	// functions of its own, too).
	s.runs.begin(code, o.Tools, o.RunTTL)
	if len(o.Tools) == 0 {
		return s.host.Feed(ctx, s.repl, code, o.Inputs...)
	}
	if s.opts.JSONOnly {
		return nil, fmt.Errorf("%w: client tools need the interpreter's dump, which a JSONOnly session does not keep", runtime.ErrInvalidOption)
	}
	host, err := withTools(s.host, o.Tools)
	if err != nil {
		return nil, err
	}
	return host.Feed(ctx, s.repl, code, o.Inputs...)
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
		res.Paused = s.runs.pause(suspended, s.repl.Execution(), s.id)
	case err == nil:
	case errors.As(err, &pyErr) && !errors.Is(err, runtime.ErrCancelled):
		res.Err = pyErr
		if !captureErr {
			s.state.describe(res)
			if err := s.rollback(ctx); err != nil {
				return res, err
			}
			s.keepKey(ctx, res)
			return res, nil
		}
	default:
		// Cancelled, host limit, dead interpreter: put the last saved state back.
		if rerr := s.rollback(ctx); rerr != nil {
			return res, errors.Join(err, rerr)
		}
		s.state.describe(res)
		return res, err
	}
	if res.Paused != nil {
		err = s.savePause(ctx, res, s.tc) // the code is not done yet
	} else {
		err = s.save(ctx, res, nextContext(s.tc, code))
	}
	if err != nil || !res.Saved {
		// Not stored (store failure, conflict, size cap): the live state
		// goes back to what is stored, so that it never holds changes a
		// later call could save as if this one had succeeded.
		if rerr := s.rollback(ctx); rerr != nil {
			return res, errors.Join(err, rerr)
		}
	}
	switch {
	case err == nil && !res.Saved:
		s.keepKey(ctx, res)
	case errors.Is(err, store.ErrConflict) && s.keyed != nil:
		// Another writer got there first: a racing call with the same
		// key, in another process, when its key is stored now.
		if replay, rerr := s.replayed(s.keyed); replay != nil || rerr != nil {
			return replay, rerr
		}
	}
	return res, err
}

// savePause stores the state of a run paused at res.Paused's calls, under
// a span of its own. A paused run that is not stored cannot be resumed: it
// is over, and res.Paused is cleared.
func (s *Session) savePause(ctx context.Context, res *Result, tc *typecheck.Context) error {
	s.runs.paused.rec.Trace = telemetry.Traceparent(ctx)
	ctx, span := telemetry.Start(ctx, telemetry.SpanPause, trace.SpanKindInternal, pauseAttrs(res.Paused)...)
	err := s.save(ctx, res, tc)
	if err == nil && !res.Saved {
		err = fmt.Errorf("session %s: the paused run could not be stored (%s): %w", s.id, res.NotSavedReason, ErrStateTooLarge)
	}
	if err != nil {
		res.Paused = nil
	}
	telemetry.End(span, err)
	return err
}

// save persists the state after a call, with the type check context tc.
func (s *Session) save(ctx context.Context, res *Result, tc *typecheck.Context) error {
	if s.opts.Ephemeral {
		res.NotSavedReason = NotSavedEphemeral
		s.state.describe(res)
		return nil
	}
	var marks []runtime.GlobalMark
	rebound := false
	if s.runs.paused == nil {
		var err error
		if marks, rebound, err = s.view.changes(ctx, s.repl); err != nil {
			return err
		}
	}
	same := !rebound && s.unchanged(ctx)
	if same && s.keyed == nil {
		// Nothing to store: the call changed nothing.
		return s.savedAsIs(res, tc)
	}
	g, err := s.snapshotUnlessPaused(ctx, marks)
	if err != nil {
		return err
	}
	res.ViewOmitted = g.omitted
	b := &blob{MontyVersion: s.state.montyVersion, ModuleSum: s.state.module, Names: g.names, namesJSON: g.namesJSON, JSON: g.json,
		JSONOnly: s.opts.JSONOnly, TypeCheck: tc, Run: s.runs.record(), Keys: s.keysFor(res, true)}
	if s.state.saved != nil {
		b.Driver = s.state.saved.Driver // kept for the surface that drove it
	}
	if s.state.saved != nil || len(s.decided) > 0 {
		var older []Decision
		if s.state.saved != nil {
			older = s.state.saved.Decisions
		}
		b.Decisions = withDecisions(older, s.decided)
	}
	mark := s.state.filesSection(b)
	if err := s.dumpInto(ctx, b); err != nil {
		return err
	}
	_, err = s.state.put(ctx, b, mark)
	if same && errors.Is(err, store.ErrUnavailable) {
		// Only the idempotency key was to be stored, and the store
		// cannot take it: the answer is not kept, and a retry runs the
		// call again, which changes nothing either.
		return s.savedAsIs(res, tc)
	}
	var tooLarge *sizeError
	switch {
	case errors.As(err, &tooLarge):
		res.NotSavedReason = fmt.Sprintf("state is %d bytes, over the %d-byte limit; the previously saved state is kept (the next call continues from it, or starts empty when there is none)", tooLarge.size, tooLarge.limit)
		s.state.describe(res)
		return nil
	case errors.Is(err, store.ErrConflict):
		s.state.describe(res)
		// Another writer got there first: ours is not stored, and the
		// live state no longer matches the store, so reload next time.
		_ = s.reload(ctx)
		return fmt.Errorf("session %s: %w: another process updated this session; this call's changes were not saved", s.id, err)
	case err != nil:
		s.state.describe(res)
		return err
	}
	s.tc = tc
	res.Saved = true
	s.state.describe(res)
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

// savedAsIs ends the save of a call that changed nothing: the stored state
// is the session's as it is (unchanged.go).
func (s *Session) savedAsIs(res *Result, tc *typecheck.Context) error {
	s.tc = tc
	res.Saved = true
	s.state.describe(res)
	return nil
}

// dumpInto puts the live REPL's dump in b: whole while a run is paused,
// otherwise in parts, continuing those the REPL was loaded from or last
// saved as (none for a JSON-only session).
func (s *Session) dumpInto(ctx context.Context, b *blob) error {
	var err error
	switch {
	case s.opts.JSONOnly:
	case b.Run != nil:
		b.Dump, err = s.repl.Dump(ctx)
	default:
		from := s.state.lineage
		var since runtime.DumpMarks
		if from != nil {
			since = from.marks
		}
		var d *runtime.Delta
		if d, err = s.repl.DumpDelta(ctx, since); err == nil {
			b.Parts, err = from.next(d, !s.opts.NoCompression)
		}
	}
	return err
}

// Resume continues the paused run runID with results for its calls, and
// runs until it completes or pauses again (Result.Paused, with a new
// RunID), storing the state under the same compare-and-set as Exec: when
// two Resumes of one run race, in this process or others, one stores its
// outcome and the other fails with store.ErrConflict. For a sync call the
// run is stopped at, results must answer it; awaited async calls may be
// answered all at once or some at a time.
//
// A resumed run that raises stores the state the exception left (the
// state before the run is gone once it paused), with its Result.Err set;
// a resume that fails otherwise (cancelled, a limit of the host, a store
// failure) leaves the run paused as it was, to be resumed again.
//
// A run that another resume claimed (ResumeOptions.Claim) fails with
// ErrRunClaimed while the claim holds; once it lapsed, the run is listed
// again and that pause is the Result (see ResumeOptions).
func (s *Session) Resume(ctx context.Context, runID string, results []ToolResult) (*Result, error) {
	return s.ResumeOptions(ctx, runID, results, ResumeOptions{})
}

// ResumeOptions is Resume for a resume that makes calls itself before the
// run goes on: the approved calls of tools that wait for a person's
// approval (o.Make). With o.Claim, the run is claimed in the store before
// they are made, so that of racing resumes, here or in other processes,
// exactly one makes them: the others fail with ErrRunClaimed (which
// matches ErrRunNotPaused). A claiming resume that fails after its claim
// (a limit, a store failure, Make's error) lists the run again at once,
// the claimed calls marked ToolCall.MayHaveRun; one that dies leaves the
// claim, and the first resume after its lease lapsed lists the run again
// the same way. Such a run has a new RunID, Paused.Previous naming the
// old one: a resume of the old id (or the one finding the lapsed claim)
// gets that pause as its Result, nothing made or run, and only a resume
// of the new id decides the calls anew. The results' Decisions are
// stored with the session's state (Decisions) when the outcome is.
func (s *Session) ResumeOptions(ctx context.Context, runID string, results []ToolResult, o ResumeOptions) (res *Result, err error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
	ctx, span := s.opts.Telemetry.StartExecution(ctx, s.id, true)
	defer func() {
		o := outcomeOf(res, err)
		if o.RunID == "" {
			o.RunID = telemetry.Clip(runID) // the caller's words
		}
		span.End(o)
	}()
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	if res, err := s.startKeyed(o.Idempotency); res != nil || err != nil {
		return res, err
	}
	r, err := s.resumeRun(ctx, runID, results, o)
	if err != nil {
		return nil, err
	}
	if r.relisted != nil {
		res = &Result{Paused: r.relisted}
		s.state.describe(res)
		return res, nil
	}
	run := r.run
	span.Link(run.rec.Trace)
	err = r.resumed
	e := run.exec
	var v object.Value
	if err == nil {
		if e.Done() {
			v = e.Value()
		} else {
			v, err = r.host.Continue(ctx, e, r.waiting)
		}
	}
	var suspended *runtime.Suspended
	s.runs.resumed(run, r.results, e, errors.As(err, &suspended))
	for _, res := range r.results {
		if res.Decision != nil {
			d := *res.Decision
			d.RunID, d.CallID = cmp.Or(d.RunID, runID), cmp.Or(d.CallID, res.ID)
			s.decided = append(s.decided, d)
		}
	}
	defer func() { s.decided = nil }()
	// An exception the code raised ends the run and is stored; a limit
	// (time, memory, ...) leaves the run paused as it was stored.
	capture := runtime.LimitOf(err) == runtime.NoLimit
	s.keyed = o.Idempotency
	defer func() { s.keyed = nil }()
	res, err = s.finishCall(ctx, run.rec.Code, v, err, capture)
	if r.token != "" && (err != nil || !res.Saved) {
		s.giveUp(ctx, r.token)
	}
	return res, err
}

// resumed is what resumeRun hands over: the run to go on with, or the
// pause that answers the resume.
type resumed struct {
	// relisted, when set, answers the resume: the run listed again.
	relisted *Paused
	run      *activeRun
	host     *runtime.Host
	// results are those the run goes on with (Make's); waiting the calls
	// still unanswered.
	results []ToolResult
	waiting []uint32
	// resumed is the error of handing the results over, which ends the
	// run as the error of a call does.
	resumed error
	// token is the claim this resume holds; "" when none.
	token string
}

// resumeRun hands results to the paused run runID, under a span of its
// own, after the calls o makes (claimed first), the session caught up
// with the store. A non-nil err means nothing was resumed.
func (s *Session) resumeRun(ctx context.Context, runID string, results []ToolResult, o ResumeOptions) (r resumed, err error) {
	ctx, span := telemetry.Start(ctx, telemetry.SpanResume, trace.SpanKindInternal,
		telemetry.AttrRunID.String(telemetry.Clip(runID)), telemetry.AttrToolCalls.Int(len(results)))
	defer func() { telemetry.End(span, errors.Join(err, r.resumed)) }()
	run, relisted, err := s.runs.find(s.id, runID)
	if err != nil {
		return r, err
	}
	if relisted {
		r.relisted = run.rec.public(s.id)
		return r, nil
	}
	if r.relisted, err = s.checkClaim(ctx, run); err != nil || r.relisted != nil {
		return r, err
	}
	if _, _, err := run.rec.answer(results); err != nil {
		return r, err
	}
	if o.Check != nil {
		if err := o.Check(run.rec.public(s.id)); err != nil {
			return r, err
		}
	}
	if s.it.Dead() != nil || s.it.Outdated() {
		if err := s.rollback(ctx); err != nil {
			return r, err
		}
		if !s.runs.has(runID) {
			return r, fmt.Errorf("%w: session %s lost run %q while restoring its state", ErrRunNotPaused, s.id, runID)
		}
		run = s.runs.paused
	}
	if len(o.Claim) > 0 {
		ids, err := run.rec.claimIDs(o.Claim)
		if err != nil {
			return r, err
		}
		if r.token, err = s.claim(ctx, run, ids, o); err != nil {
			return r, err
		}
		run = s.runs.paused
		span.SetAttributes(telemetry.AttrClaimed.Bool(true))
	}
	if o.Make != nil {
		if results, err = o.Make(ctx, run.rec.public(s.id), results); err != nil {
			if r.token != "" {
				s.giveUp(ctx, r.token)
			}
			return r, err
		}
	}
	answer, waiting, err := run.rec.answer(results)
	if err != nil {
		if r.token != "" {
			s.giveUp(ctx, r.token)
		}
		return r, err
	}
	s.it.SetLimits(s.opts.Limits)
	s.it.SetPrintFunc(s.opts.Print)
	if r.host, err = withTools(s.host, run.rec.Tools); err != nil {
		return r, corrupt("paused run tools: %v", err)
	}
	r.run, r.results, r.waiting = run, results, waiting
	r.resumed = run.exec.Resume(ctx, answer)
	return r, nil
}

// giveUpTimeout bounds giveUp's store write.
const giveUpTimeout = 30 * time.Second

// giveUp lists the run claimed with token again, its claimed calls marked
// as may have run, after the claiming resume failed: the live state is
// the stored one again (a failed call rolls back), which still holds the
// claim unless another resume took it over. It is best effort: when it
// cannot store the run, the claim's lease lapsing does the same.
func (s *Session) giveUp(ctx context.Context, token string) {
	// Its own deadline: the resume's context may have ended (that may be
	// why it failed), and a store that hangs must not hold the session.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	defer cancel()
	if s.runs.paused == nil || s.runs.paused.rec.Claim == nil || s.runs.paused.rec.Claim.Token != token {
		return
	}
	_, _ = s.relist(ctx)
}

// Check type-checks code against the session (its earlier calls, tc's
// stubs) without running it, under the session's time and memory limits.
// It also makes the session record its calls for later checks.
func (s *Session) Check(ctx context.Context, code string, tc TypeCheck) (*typecheck.Result, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
	return s.check(ctx, code, &tc, nil, nil)
}

// WriteFile creates or replaces the session's file name ("out.csv" or
// "/work/out.csv"), with its parent directories, and stores the state at
// once under the same compare-and-set as a call: it fails with ErrBusy
// while a call runs, and with an error matching store.ErrConflict when
// another process changed the session since it was loaded (the session
// then holds that process's state). Errors match vfs.ErrNoSpace when
// the files would pass their limits, ErrStateTooLarge when the state would
// pass Options.MaxStateSize, fs.ErrInvalid for a bad path; the files are
// then unchanged. It needs Options.Files (ErrNoFiles).
func (s *Session) WriteFile(ctx context.Context, name string, data []byte) (*FileUpdate, error) {
	rel, err := filePath(name)
	if err != nil {
		return nil, err
	}
	return s.changeFiles(ctx, func(mem *vfs.MemFS) (bool, error) { return writeTo(mem, s.id, rel, data) })
}

// RemoveFile removes the session's file name and stores the state at once,
// as WriteFile does; an error matching fs.ErrNotExist when there is no such
// file.
func (s *Session) RemoveFile(ctx context.Context, name string) (*FileUpdate, error) {
	rel, err := filePath(name)
	if err != nil {
		return nil, err
	}
	return s.changeFiles(ctx, func(mem *vfs.MemFS) (bool, error) { return false, removeFrom(mem, s.id, rel) })
}

// changeFiles applies change to /work between calls and stores the
// result, or puts /work back as stored.
func (s *Session) changeFiles(ctx context.Context, change func(mem *vfs.MemFS) (created bool, err error)) (*FileUpdate, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
	files := s.state.files
	if files == nil {
		return nil, fmt.Errorf("session %s: %w", s.id, ErrNoFiles)
	}
	created, err := change(files)
	if err == nil {
		var info store.Info
		info, err = s.state.putFiles(ctx)
		var tooLarge *sizeError
		switch {
		case err == nil:
			return &FileUpdate{Created: created, State: info}, nil
		case errors.As(err, &tooLarge):
			err = fmt.Errorf("session %s: %w: with this change the state is %d bytes, over the %d-byte limit (Options.MaxStateSize); nothing was stored", s.id, ErrStateTooLarge, tooLarge.size, tooLarge.limit)
		case errors.Is(err, store.ErrConflict):
			_ = s.reload(ctx)
			err = fmt.Errorf("session %s: %w: another process updated this session; the file change was not saved", s.id, err)
		}
	}
	if files.Generation() != s.state.filesGen {
		// Put /work back as stored (a conflict has reloaded it already).
		if rerr := s.state.restoreFiles(s.state.saved); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
	}
	return nil, err
}

// Clear deletes the stored state and starts the session empty.
func (s *Session) Clear(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
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

// Decisions returns the decisions on the session's approval calls, oldest
// first: the last MaxDecisions stored with its state.
func (s *Session) Decisions() []Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.saved == nil {
		return nil
	}
	return slices.Clone(s.state.saved.Decisions)
}

// checkState refuses a call expecting the stored state want
// (ExecOptions.IfState; "" expects nothing) when the store holds another.
func (s *Session) checkState(want string) error {
	if want == "" {
		return nil
	}
	switch got := s.state.info.SHA256; {
	case s.state.saved == nil:
		return fmt.Errorf("%w: session %s has no stored state (it was never stored, or the store lost or deleted it)", ErrStateChanged, s.id)
	case want != "*" && got != want:
		return fmt.Errorf("%w: session %s's stored state is %s, not %s", ErrStateChanged, s.id, got, want)
	}
	return nil
}

// replayed looks o's key up in the stored state: the Result replaying the
// call that used it, nil when none did, or a *KeyReusedError.
func (s *Session) replayed(o *Idempotency) (*Result, error) {
	if o == nil || s.state.saved == nil {
		return nil, nil
	}
	r := findKey(s.state.saved.Keys, o.Key, time.Now())
	if r == nil {
		return nil, nil
	}
	return replayOf(s.state, r, o)
}

// startKeyed begins a call with o (nil: none): it refuses a bad key, and
// answers a call whose key was used (a Result with Replay set, or a
// *KeyReusedError) before anything runs.
func (s *Session) startKeyed(o *Idempotency) (*Result, error) {
	if o == nil {
		return nil, nil
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if s.opts.Ephemeral {
		return nil, fmt.Errorf("%w: an idempotency key needs stored state, and this session is ephemeral", runtime.ErrInvalidOption)
	}
	return s.replayed(o)
}

// keysFor are the idempotency records of the state a call saves: the
// stored ones, and the call's own (s.keyed) with res's answer (saved:
// the state saved is the call's own).
func (s *Session) keysFor(res *Result, saved bool) []keyRecord {
	var older []keyRecord
	var replaced *keyState
	if saved := s.state.saved; saved != nil {
		older = saved.Keys
		replaced = &keyState{Size: s.state.info.Size, SHA256: s.state.info.SHA256}
	}
	var add *keyRecord
	if s.keyed != nil {
		add = newKeyRecord(s.keyed, res, saved, time.Now())
	}
	if len(older) == 0 && add == nil {
		return nil
	}
	return nextKeys(older, replaced, add, time.Now())
}

// keepKey stores the key of a call whose own state was not stored (its
// code raised, or the state was too large): the stored state again, with
// the key and answer added, so that a retry replays instead of running.
// It is best effort: when it fails, the retry runs the call again, which
// had no effect on the state.
func (s *Session) keepKey(ctx context.Context, res *Result) {
	if s.keyed == nil || s.opts.Ephemeral {
		return
	}
	base := s.state.saved
	if base == nil {
		base = blank(s.state.montyVersion, s.state.module)
	}
	b := *base
	b.Keys = s.keysFor(res, false)
	mark := filesMark{gen: s.state.filesGen, cache: s.state.filesCache}
	if _, err := s.state.put(ctx, &b, mark); err != nil {
		if errors.Is(err, store.ErrConflict) {
			_ = s.reload(ctx)
		}
		return
	}
	s.state.describe(res)
}

// Replayed returns the Result replaying the call of the session that used
// o's key (Result.Replay set), nil when none did, or a *KeyReusedError
// when one did for another request; the session is as the store held it
// when it was opened or last synced (Sync). A caller that must answer a
// retried request before it checks anything else (such as a resume of a
// run that request completed) asks here first.
func (s *Session) Replayed(o *Idempotency) (*Result, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.busy.Store(false)
	defer s.mu.Unlock()
	return s.startKeyed(o)
}

// unchanged reports whether the call just made changed nothing (see
// above): no run is paused and the call made no decisions, and its REPL
// is as stored (unchangedBy).
func (s *Session) unchanged(ctx context.Context) bool {
	return !s.opts.JSONOnly && s.runs.paused == nil && len(s.decided) == 0 && s.state.unchangedBy(ctx, s.repl)
}
