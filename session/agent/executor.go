package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/tools"
)

// ToolName is the name of the execute_python tool.
const ToolName = "execute_python"

// Defaults of ExecutorOptions, as in the seed's tool.
const (
	DefaultTimeout   = 5 * time.Second
	DefaultMaxMemory = 16 << 20
)

// Errors, for use with errors.Is.
var (
	// ErrBadArgs matches errors in a tool call's arguments that the model
	// can correct (an *ArgsError names the tool): execute_python arguments
	// that are not a JSON object with a string "code", a session_id that
	// is not one, resume_python results that do not answer the paused run.
	ErrBadArgs = errors.New("agent: bad tool arguments")
	// ErrTimeout matches Result.Err when the code ran longer than the
	// executor's time limit (Session.Limits.MaxDuration, host calls
	// included); so does runtime.ErrTimeLimit.
	ErrTimeout = errors.New("agent: execution timed out")
)

// ArgsError is an error in the arguments of a tool call. It matches
// ErrBadArgs, and what Err matches.
type ArgsError struct {
	// Tool is the tool whose arguments are wrong (ToolName,
	// ResumeToolName); empty when the error is not about one tool's
	// arguments (from SessionID).
	Tool string
	// Err says what is wrong, in the caller's terms.
	Err error
}

// Error says which tool's arguments are wrong, and how.
func (e *ArgsError) Error() string {
	tool := cmp.Or(e.Tool, "tool")
	return "agent: bad " + tool + " arguments: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *ArgsError) Unwrap() error { return e.Err }

// Is reports whether target is ErrBadArgs.
func (e *ArgsError) Is(target error) bool { return target == ErrBadArgs }

// badArgs is an *ArgsError of tool with a formatted message.
func badArgs(tool, format string, args ...any) error {
	return &ArgsError{Tool: tool, Err: fmt.Errorf(format, args...)}
}

// TypeCheckErrorType is Result.ErrorType when a type check refused the
// code (Result.Err then matches typecheck.ErrTypeErrors).
const TypeCheckErrorType = "TypeCheckError"

// ExecutorOptions configure an Executor.
type ExecutorOptions struct {
	// Keeper is the keeper of live sessions the executor claims its
	// sessions from (required): the process's one keeper, shared with its
	// other surfaces (an HTTP API, a monty.v1 server), so that a session
	// runs one call at a time whichever surface the call came through. A
	// session the keeper holds open keeps the options it was opened with,
	// except its host and limits, which each call sets. The executor does
	// not close it.
	Keeper *session.Manager
	// Session configures the sessions (Store defaults to the Keeper's).
	// Its Host is replaced by the Functions' host; its Print is not used
	// (the output is in the Result and the events). Its Limits are the calls' limits,
	// each zero field its default (runtime.Limits) except two, whose
	// defaults are the executor's: MaxDuration bounds each call's wall
	// time, host calls included, as the executor's timeout (ErrTimeout;
	// 0 means DefaultTimeout, runtime.Unlimited none), and MaxMemory the
	// interpreter heap (0 means DefaultMaxMemory, runtime.Unlimited none).
	// MaxHostCalls and MaxHostTime bound the host calls of a call.
	Session session.Options
	// Keys, when set, gives the keys of each session by its store id: it
	// opens with them as its Session.SigningKey and VerifyKeys (for
	// example apikey.StoreKeys, which signs each session with a key of its
	// own, as the HTTP API does). It may be called concurrently.
	Keys func(id string) (signing []byte, verify [][]byte)
	// Functions are the host functions the code can call; nil offers only
	// the introspection built-ins.
	Functions *tools.Registry
	// TypeCheck type-checks each call's code before it runs, against the
	// host functions' signatures (Registry.Stubs), Stubs and the session's
	// earlier calls; code with problems is not run and the diagnostics are
	// the call's error text. A call's "type_check" argument overrides it.
	TypeCheck bool
	// Stubs is further stub (.pyi) text for type checks: names the code
	// may use that the registry does not describe.
	Stubs string
	// Checker runs the type checks; nil means typecheck.Default, compiled
	// at the first checked call.
	Checker *typecheck.Checker
	// OS serves the code's file, environment and clock calls (for example
	// the operator's mounts); nil denies them.
	OS runtime.OSHandler
	// Mounts describe the directories OS serves, for the tool's
	// description: each one's guest path, mode and write limit (never its
	// host path). The executor does not open them. With Mounts, the
	// description says that other paths (beyond /work) cannot be opened;
	// with an OS but no Mounts, it says nothing about files beyond /work.
	Mounts []vfs.MountSpec
	// BriefingBudget is the size of the tool's description, in estimated
	// tokens, past which the host functions are listed by name rather
	// than as stubs (and, past it again, counted by category): 0 means
	// DefaultBriefingBudget, negative means no limit.
	BriefingBudget int
	// OmitCallResults leaves the host function calls' results out of
	// Result.Text. By default the text has each call's result in order
	// with the print output, as seed 002's executor collects its text: a
	// line "[name returned <JSON or repr>]" or "[name raised <Type:
	// message>]", the result cut after 2 KiB. Omitted, the text is what
	// the code printed and its value, so the code must print what it
	// wants the model to see.
	OmitCallResults bool
	// FailOnCorruptState makes a call fail (an error matching
	// session.ErrCorrupt) when its session's stored state cannot be loaded:
	// damaged, of another format, written for another session or signed
	// with another key. By default the state is kept aside, the session
	// starts empty and the call's Result.StateWarning (and Text) says so.
	// It replaces Session.FreshOnCorrupt.
	FailOnCorruptState bool
	// StoreID, when set, is where the session of a call lives in the
	// store, in place of SessionID's layout: given the thread key and the
	// call's session_id ("" for the thread's own session), the store id,
	// or an error saying what the caller must change (the call fails
	// with an *ArgsError wrapping it). It must map different pairs to
	// different ids, and may be called concurrently. For sessions signed
	// with keys of their own, set Keys too (it is given the store id).
	// monty mcp --api-key, for example, keeps its sessions as the HTTP API
	// does, with apikey.StoreID of apikey.ThreadSessionID and
	// apikey.StoreKeys.
	StoreID func(threadKey, sessionID string) (string, error)
	// Logger gets a record of each decision on a call that waited for
	// approval, carried out by a resume (slog.Default when nil).
	Logger *slog.Logger
}

// Executor runs execute_python tool calls: each thread key (a conversation)
// has its own persistent session, so variables, functions and classes
// defined in one call are there in the next, in this process or, through
// the store, another one.
//
// Calls for the same session never interleave: a second call waits until
// the first is done (or its context ends), then runs. Calls for different
// sessions run in parallel, up to ManagerOptions.MaxLive.
//
// An Executor is safe for concurrent use.
type Executor struct {
	keeper  *session.Manager
	sopts   session.Options                    // what sessions open with (keys aside)
	keys    func(id string) ([]byte, [][]byte) // ExecutorOptions.Keys
	store   store.Store
	fns     *tools.Registry
	timeout time.Duration
	check   bool              // type-check calls that do not say
	calls   bool              // !OmitCallResults
	tc      session.TypeCheck // how to check them (Stubs: checkStubs)
	stubs   string            // ExecutorOptions.Stubs
	brief   briefing          // what the tool's description tells
	tel     *telemetry.Telemetry
	log     *slog.Logger                                      // ExecutorOptions.Logger
	mapID   func(threadKey, sessionID string) (string, error) // ExecutorOptions.StoreID
}

// NewExecutor returns an executor claiming its sessions from
// opts.Keeper.
func NewExecutor(opts ExecutorOptions) (*Executor, error) {
	if opts.Keeper == nil {
		return nil, errors.New("agent: ExecutorOptions.Keeper is required: the process's keeper of live sessions (session.NewManager), shared by its surfaces")
	}
	if opts.Session.Store == nil {
		opts.Session.Store = opts.Keeper.Store()
	}
	if opts.Session.Store == nil {
		return nil, errors.New("agent: ExecutorOptions.Session.Store is required (the Keeper has none)")
	}
	fns := opts.Functions
	if fns == nil {
		fns, _ = tools.NewRegistry()
	}
	host := fns.Host()
	host.OS = opts.OS
	sopts := opts.Session
	sopts.Host, sopts.Print = host, nil
	sopts.FreshOnCorrupt = !opts.FailOnCorruptState
	sopts.Telemetry = sopts.Telemetry.Or()
	sopts.Store = sopts.Telemetry.Store(sopts.Store)
	// The executor bounds a call's time itself (ErrTimeout), host calls
	// and all.
	timeout := cmp.Or(sopts.Limits.MaxDuration, DefaultTimeout)
	sopts.Limits.MaxDuration = 0
	if sopts.Limits.MaxMemory == 0 {
		sopts.Limits.MaxMemory = DefaultMaxMemory
	}
	return &Executor{
		keeper:  opts.Keeper,
		sopts:   sopts,
		keys:    opts.Keys,
		store:   sopts.Store,
		fns:     fns,
		timeout: timeout,
		check:   opts.TypeCheck,
		calls:   !opts.OmitCallResults,
		tc:      session.TypeCheck{Checker: opts.Checker, Format: typecheck.Full},
		stubs:   opts.Stubs,
		brief:   newBriefing(opts, sopts.Limits, timeout),
		tel:     sopts.Telemetry,
		log:     opts.Logger,
		mapID:   opts.StoreID,
	}, nil
}

// checkStubs are the stubs calls are checked against: the registry's as
// they are now (an MCP server's tools change with tools/list_changed),
// then ExecutorOptions.Stubs.
func (e *Executor) checkStubs() string {
	stubs := e.fns.Stubs()
	if e.stubs != "" {
		stubs += "\n" + e.stubs
	}
	return stubs
}

// Telemetry is where the executor's spans and metrics go: its
// Session.Telemetry, or telemetry.Default.
func (e *Executor) Telemetry() *telemetry.Telemetry { return e.tel }

// Tool returns the execute_python tool definition: the parameters are
// "code" (required), "session_id", "type_check" and "client_tools"
// (optional), and the description briefs the model from the configuration: the Python subset
// Monty runs (what works and what does not, each claim tested against the
// interpreter), what persists between calls, the limits, the files (/work,
// Mounts) and the host functions, classes and MCP namespaces as stubs, or
// by name past BriefingBudget. It depends only on the options and what the
// registry holds.
func (e *Executor) Tool() tools.Tool {
	return tools.Tool{
		Name:        ToolName,
		Description: e.brief.description(e.fns),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"code":{"type":"string","description":"Python source code to execute"},` +
			`"session_id":{"type":"string","description":"Optional name of a separate session within this conversation (letters, digits and . _ - :); omit it to use the conversation's session"},` +
			`"type_check":{"type":"boolean","description":"Type-check the code against the available functions and this session's earlier code before running it; if the check finds problems, nothing runs and they are returned (default: ` + strconv.FormatBool(e.check) + `)"},` +
			`"client_tools":{"type":"array","description":"Functions the code may call that you answer yourself (for example your other tools): a call pauses the run and the result lists the calls; answer them with ` + ResumeToolName + `. With async true a call is awaitable, so asyncio.gather pauses once for several.",` +
			`"items":{"type":"object","properties":{"name":{"type":"string"},"async":{"type":"boolean"}},"required":["name"]}},` +
			idempotencyKeyParam + `},` +
			`"required":["code"]}`),
	}
}

// ToolArgs are the arguments of an execute_python call.
type ToolArgs struct {
	Code      string `json:"code"`
	SessionID string `json:"session_id,omitempty"`
	// TypeCheck, when set, says whether to type-check this call
	// (ExecutorOptions.TypeCheck otherwise).
	TypeCheck *bool `json:"type_check,omitempty"`
	// ClientTools are functions the caller answers: a call pauses the run
	// (Result.Paused) until Resume (resume_python) gives the results.
	ClientTools []ClientToolArg `json:"client_tools,omitempty"`
	// IdempotencyKey, when set, makes the call safe to retry: a call with
	// the key and the same arguments answers what the first one did and
	// runs nothing (session.Idempotency).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// ClientToolArg declares a client tool in ToolArgs.
type ClientToolArg struct {
	Name  string `json:"name"`
	Async bool   `json:"async,omitempty"`
}

// ParseArgs decodes tool-call arguments. Errors match ErrBadArgs.
func ParseArgs(raw json.RawMessage) (ToolArgs, error) {
	var a struct {
		Code           *string         `json:"code"`
		SessionID      *string         `json:"session_id"`
		TypeCheck      *bool           `json:"type_check"`
		ClientTools    []ClientToolArg `json:"client_tools"`
		IdempotencyKey string          `json:"idempotency_key"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&a); err != nil {
		return ToolArgs{}, badArgs(ToolName, "want a JSON object with a string \"code\": %v", err)
	}
	if a.Code == nil {
		return ToolArgs{}, badArgs(ToolName, "\"code\" is required")
	}
	out := ToolArgs{Code: *a.Code, TypeCheck: a.TypeCheck, ClientTools: a.ClientTools, IdempotencyKey: a.IdempotencyKey}
	seen := map[string]bool{}
	for _, t := range a.ClientTools {
		if !tools.IsIdentifier(t.Name) || seen[t.Name] {
			return ToolArgs{}, badArgs(ToolName, "client tool name %q is not a Python identifier, or is given twice", t.Name)
		}
		seen[t.Name] = true
	}
	if a.SessionID != nil {
		out.SessionID = *a.SessionID
	}
	return out, nil
}

// SessionID is the store id of the session a call runs in: the thread key
// alone, or threadKey/session_id when the call names a session (session_id
// alone when the thread key is empty). Neither may contain "/", so that
// different threads never share an id and a call cannot reach another
// thread's sessions. Errors are *ArgsError (matching ErrBadArgs). An
// executor with ExecutorOptions.StoreID keeps its sessions elsewhere.
func SessionID(threadKey, sessionID string) (string, error) {
	return storeID("", threadKey, sessionID)
}

// storeID is the store id of the session of a call of tool:
// ExecutorOptions.StoreID's, or SessionID's.
func (e *Executor) storeID(tool, threadKey, sessionID string) (string, error) {
	if e.mapID == nil {
		return storeID(tool, threadKey, sessionID)
	}
	id, err := e.mapID(threadKey, sessionID)
	if err == nil {
		err = store.CheckID(id)
	}
	if err != nil {
		return "", &ArgsError{Tool: tool, Err: err}
	}
	return id, nil
}

// storeID is SessionID for a call of tool.
func storeID(tool, threadKey, sessionID string) (string, error) {
	id := threadKey
	switch {
	case sessionID == "" && threadKey == "":
		return "", badArgs(tool, "no thread key and no session_id")
	case strings.Contains(sessionID, "/"):
		return "", badArgs(tool, "session_id %q may not contain '/'", sessionID)
	case strings.Contains(threadKey, "/"):
		return "", badArgs(tool, "thread key %q may not contain '/'", threadKey)
	case sessionID != "" && threadKey != "":
		id = threadKey + "/" + sessionID
	case sessionID != "":
		id = sessionID
	}
	if err := store.CheckID(id); err != nil {
		return "", &ArgsError{Tool: tool, Err: err}
	}
	return id, nil
}

// Result is the outcome of an execute_python call.
type Result struct {
	// Text is what the model sees: the print output, then the repr of the
	// final value unless it is None, or the traceback (or the reason) when
	// the code failed.
	Text string `json:"text"`
	// Output is the print output, both streams in order.
	Output string `json:"output"`
	// Value is the value of the final expression (None after a statement);
	// nil when the code failed.
	Value object.Value `json:"-"`
	// Repr is repr(Value) unless Value is None or nil.
	Repr string `json:"result,omitempty"`
	// Err is why the code failed: a *runtime.Error for a Python exception
	// (limits included: errors.Is(err, runtime.ErrMemoryLimit)), an error
	// matching ErrTimeout, or another limit the host enforces
	// (runtime.LimitOf(err) names it: host calls, result size, the memory
	// ceiling, stored state too large to load). The session is left as it
	// was before the call (unless Session.CaptureOnError).
	Err error `json:"-"`
	// ErrorType is the Python exception type of Err ("TimeoutError" for
	// ErrTimeout, "RuntimeError" for the host call limit, "MemoryError" for
	// memory and size limits); Error is its text (the traceback for an
	// exception).
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
	// SessionID is the session_id the call named, as the caller gave it:
	// what resume_python and reset_session take to reach this session.
	// It is empty (and left out of the JSON) for the conversation's own
	// session.
	SessionID string `json:"session_id,omitempty"`
	// RunID is the id resume_python takes when the run is paused (the same
	// as Paused.RunID); empty otherwise.
	RunID string `json:"run_id,omitempty"`
	// StoreID is the id the session is stored under (see the SessionID
	// function and ExecutorOptions.StoreID); EventRunID is the run id its events carry (Event.RunID).
	// Neither is part of the tool's answer.
	StoreID    string `json:"-"`
	EventRunID string `json:"-"`
	// Saved is true when the call stored new session state; StateSize and
	// StateHash describe the stored state.
	Saved     bool   `json:"saved"`
	StateSize int64  `json:"state_size,omitempty"`
	StateHash string `json:"state_hash,omitempty"`
	// NotSaved says why the state of a call that succeeded was not stored
	// (it is over the session size cap); the call's changes are then not
	// kept. Text mentions it too.
	NotSaved string `json:"not_saved,omitempty"`
	// StateWarning, on the first call after the session was loaded, says
	// that it did not continue from its stored state as it was: the state
	// could not be loaded, so it was kept aside and the session started
	// empty; or it was rebuilt from its JSON view and some globals were
	// lost. Text starts with it.
	StateWarning string `json:"state_warning,omitempty"`
	// Paused is set when the code called client tools (ToolArgs.ClientTools):
	// the run is stored paused until Resume answers the calls; Text says
	// how.
	Paused *PausedRun `json:"paused,omitempty"`

	transcript string // Output with the host calls' results (unless OmitCallResults)
}

// Execute runs an execute_python tool call for a conversation: args is the
// call's JSON arguments, threadKey names the conversation (see SessionID).
// The code's own failures (exceptions, limits, the timeout) are in
// Result.Err and Result.Text with a nil error; the error is for calls that
// could not run: ErrBadArgs, a store failure, the caller's context ending,
// a closed keeper (session.ErrClosed), or session.ErrTooManySessions.
func (e *Executor) Execute(ctx context.Context, threadKey string, args json.RawMessage) (*Result, error) {
	return e.ExecuteEvents(ctx, threadKey, args, nil)
}

// ExecuteEvents is Execute that also reports the run to sink as events,
// in order, as it happens (see Run for how sink is called). A call that
// cannot run reports no events.
func (e *Executor) ExecuteEvents(ctx context.Context, threadKey string, args json.RawMessage, sink func(Event)) (_ *Result, err error) {
	a, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	ctx, lease, done, err := e.take(ctx, ToolName, threadKey, a.SessionID)
	if err != nil {
		return nil, err
	}
	defer func() { err = done(err) }()
	var tc *session.TypeCheck
	if a.TypeCheck != nil && *a.TypeCheck || a.TypeCheck == nil && e.check {
		check := e.tc
		check.Stubs = e.checkStubs()
		tc = &check
	}
	opts := session.ExecOptions{TypeCheck: tc}
	for _, t := range a.ClientTools {
		opts.Tools = append(opts.Tools, session.ClientTool{Name: t.Name, Async: t.Async})
	}
	key, err := newCallKey(ToolName, a.IdempotencyKey, args)
	if err != nil {
		return nil, err
	}
	res, err := e.execute(ctx, lease, a.SessionID, tc, key, func(ctx context.Context, s *session.Session, idem *session.Idempotency) (*session.Result, error) {
		opts.Idempotency = idem
		return s.ExecOptions(ctx, a.Code, opts)
	}, sink)
	if err != nil || res.Err != nil && !errors.As(res.Err, new(*runtime.Error)) {
		// A run that was stopped (timeout, cancellation, host limit, dead
		// interpreter) leaves no live session behind: the next call
		// reopens it from its last stored state.
		lease.Forget()
	}
	return res, err
}

// execute runs op (code, or a resume) in the session the caller claimed,
// made retry-safe with key (nil: none).
func (e *Executor) execute(ctx context.Context, lease *session.Lease, named string, tc *session.TypeCheck, key *callKey, op keyedOp, sink func(Event)) (*Result, error) {
	id := lease.ID()
	s, err := e.session(ctx, lease)
	if err != nil && runtime.LimitOf(err) != runtime.NoLimit {
		// The stored state does not fit the limits: the code's failure to
		// report (the state stays stored as it is), not the executor's.
		line, _ := runtime.LimitLine(err)
		res := &Result{SessionID: named, StoreID: id, Err: err, ErrorType: runtime.LimitOf(err).ExceptionType(), Error: line}
		res.Text = text(res)
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent: session %s: %w", id, err)
	}
	var warning string
	if r, ok := s.RestoreNotice(); ok {
		warning = restoreWarning(r)
	}
	if tc != nil {
		// Compiling the checker (once per process; seconds when the cache
		// is cold) is not the code's time: it happens before the timeout
		// starts.
		if err := loadChecker(ctx, tc); err != nil {
			return nil, fmt.Errorf("agent: type checker: %w", err)
		}
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if e.timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, e.timeout, ErrTimeout)
	}
	defer cancel()
	rec, sres, err := runOp(runCtx, s, "", func(ctx context.Context, s *session.Session) (*session.Result, error) {
		return op(ctx, s, e.keyed(ctx, key, named, id, warning))
	}, sink)
	if err == nil && sres.Replay != nil {
		rec.finish(nil, nil)
		return replayed(sres.Replay, id, rec.runID)
	}
	if err != nil {
		failed := *sres
		failed.Value, failed.Err, failed.Paused = nil, nil, nil // the error says how it ended
		sres = &failed
	}
	res := e.completed(sres, named, id, warning)
	res.EventRunID = rec.runID
	const rolledBack = "; the session was left as it was before this call"
	switch {
	case err == nil && res.Paused != nil:
		for _, c := range res.Paused.Calls {
			args, _ := json.Marshal(map[string]any{"args": c.Args, "kwargs": c.Kwargs})
			rec.CallStarted(c.Name, string(args))
		}
	case err == nil:
	case errors.As(err, new(*session.KeyReusedError)):
		rec.finish(nil, err)
		return nil, &ArgsError{Tool: key.tool, Err: err}
	case errors.Is(err, typecheck.ErrTypeErrors):
		// The model's code has problems the checker found: its failure,
		// reported with the diagnostics so that it can fix them.
		var tcErr *typecheck.Error
		errors.As(err, &tcErr)
		res.Err, res.ErrorType = err, TypeCheckErrorType
		res.Error = strings.TrimRight(tcErr.Result.Text, "\n") + "\nThe type check found problems, so the code was not run; the session is unchanged."
	case errors.Is(err, ErrTimeout) && ctx.Err() == nil:
		// The executor's timeout is the call's time limit.
		res.Err = fmt.Errorf("%w after %s (%w)", ErrTimeout, e.timeout, runtime.ErrTimeLimit)
		res.ErrorType = "TimeoutError"
		res.Error = fmt.Sprintf("TimeoutError: the code ran longer than %s and was stopped%s", e.timeout, rolledBack)
	case runtime.LimitOf(err) != runtime.NoLimit:
		// A limit the host enforces (host calls, result size, the memory
		// ceiling): the code's failure, reported like an exception.
		line, _ := runtime.LimitLine(err)
		res.Err, res.ErrorType = err, runtime.LimitOf(err).ExceptionType()
		res.Error = line + rolledBack
	default:
		rec.finish(nil, err)
		return nil, fmt.Errorf("agent: session %s: %w", id, err)
	}
	rec.finish(res.Value, res.Err)
	if e.calls {
		res.transcript = rec.transcript()
	}
	res.Text = text(res)
	return res, nil
}

// completed is the Result of a call that left sres (of session named,
// store id id, with warning about its state), as far as sres tells: its
// value, exception or pause.
func (e *Executor) completed(sres *session.Result, named, id, warning string) *Result {
	res := &Result{Output: sres.Output, SessionID: named, StoreID: id, Saved: sres.Saved, NotSaved: sres.NotSavedReason, StateWarning: warning}
	if sres.HasState {
		res.StateSize, res.StateHash = sres.StateSize, sres.StateHash
	}
	switch {
	case sres.Err != nil:
		res.Err, res.ErrorType = sres.Err, sres.Err.Type
		res.Error = cmp.Or(strings.TrimRight(sres.Err.Text, "\n"), sres.Err.Error())
	case sres.Paused != nil:
		res.Paused = pausedOf(sres.Paused, named, e.fns)
		res.RunID = res.Paused.RunID
	default:
		res.Value = sres.Value
		if _, none := sres.Value.(object.None); !none && sres.Value != nil {
			res.Repr = object.Repr(sres.Value)
		}
	}
	return res
}

// loadChecker waits until tc's checker is compiled.
func loadChecker(ctx context.Context, tc *session.TypeCheck) error {
	if tc.Checker == nil {
		_, err := typecheck.Default(ctx)
		return err
	}
	return tc.Checker.Load(ctx)
}

// restoreWarning tells the model how a session that did not continue
// from its stored state was opened; "" when it did.
func restoreWarning(r session.Restore) string {
	switch {
	case r.QuarantinedAs != "":
		reason := strings.TrimPrefix(r.Reason, session.ErrCorrupt.Error()+": ")
		if errors.Is(r.Err, store.ErrUnreadable) {
			reason = "its stored entry is damaged"
		}
		return fmt.Sprintf("Note: this session's saved state could not be loaded (%s), so the session started empty: "+
			"variables, functions and classes from earlier calls are gone and must be defined again. The old state was kept aside as %q.",
			reason, r.QuarantinedAs)
	case r.FromJSON:
		w := "Note: this session was restored from the JSON form of its saved state (" + r.Reason + ")"
		if len(r.Lost) > 0 {
			w += "; these globals could not be restored and must be defined again: " + strings.Join(r.Lost, ", ")
		}
		return w + "."
	}
	return ""
}

// text renders a result for the model.
func text(r *Result) string {
	parts := make([]string, 0, 3)
	if r.StateWarning != "" {
		parts = append(parts, r.StateWarning)
	}
	if out := strings.TrimRight(cmp.Or(r.transcript, r.Output), "\n"); out != "" {
		parts = append(parts, out)
	}
	switch {
	case r.Err != nil:
		parts = append(parts, r.Error)
	case r.Paused != nil:
		parts = append(parts, pausedText(r.Paused))
	case r.Repr != "":
		parts = append(parts, r.Repr)
	}
	if r.NotSaved != "" {
		parts = append(parts, "Note: the session was not saved ("+r.NotSaved+"), so this call's changes to variables are not kept.")
	}
	return strings.Join(parts, "\n")
}

// Reset clears a conversation's session (or its named session): the stored
// state is deleted and the next call starts empty. It waits for a running
// call on that session to finish.
func (e *Executor) Reset(ctx context.Context, threadKey, sessionID string) (err error) {
	ctx, lease, done, err := e.take(ctx, "reset_session", threadKey, sessionID)
	if err != nil {
		return err
	}
	defer func() { err = done(err) }()
	id := lease.ID()
	// Close the live session, if any, and delete the stored state without
	// loading it: a reset must also work when the stored state cannot be
	// loaded (its copy kept aside stays).
	lease.Forget()
	if err := e.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("agent: reset session %s: %w", id, err)
	}
	return nil
}

// session returns the session lease claims, opened with the executor's
// options, or kept open by the keeper since an earlier call (of this
// executor or another surface) and given the executor's host and limits.
func (e *Executor) session(ctx context.Context, lease *session.Lease) (*session.Session, error) {
	opts := e.sopts
	if e.keys != nil {
		opts.SigningKey, opts.VerifyKeys = e.keys(lease.ID())
	}
	s, err := lease.Session(ctx, &opts)
	if err == nil && !lease.Fresh() {
		s.SetHost(opts.Host)
		s.SetLimits(opts.Limits)
	}
	return s, err
}

// take waits for the session of a call of tool (the one of threadKey and
// sessionID: storeID; the executor's calls of one session take turns, in
// the keeper's bounded queue, and with other instances on the claim in
// the store) and returns the claim, ctx bound to it (cancelled
// when the claim is lost: another instance may run the session then), and
// done, which releases both and returns the call's error, said as the lost
// claim (matching session.ErrLeaseLost and store.ErrUnavailable: retry
// later) when that is what stopped the call.
func (e *Executor) take(ctx context.Context, tool, threadKey, sessionID string) (context.Context, *session.Lease, func(error) error, error) {
	id, err := e.storeID(tool, threadKey, sessionID)
	if err != nil {
		return ctx, nil, nil, err
	}
	lease, err := e.keeper.Claim(ctx, id, session.ClaimOptions{Who: "another call of this session", Wait: -1})
	if err != nil {
		return ctx, nil, nil, fmt.Errorf("agent: waiting for session %s: %w", id, err)
	}
	bound, unbind := lease.Bind(ctx)
	done := func(err error) error {
		cause := context.Cause(bound)
		unbind()
		lease.Release()
		if err != nil && errors.Is(cause, session.ErrLeaseLost) && !errors.Is(err, session.ErrLeaseLost) {
			return fmt.Errorf("agent: session %s: %w: %w", id, store.ErrUnavailable, cause)
		}
		return err
	}
	return bound, lease, done, nil
}
