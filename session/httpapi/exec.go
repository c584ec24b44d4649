package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/store"
)

// ExecRequest is the body of POST /exec. Unknown fields (such as the
// "entity_id" and "user_id" other services take) are ignored.
type ExecRequest struct {
	// Code is the Python source to run.
	Code string `json:"code"`
	// SessionID continues a session; empty starts a new one.
	SessionID string `json:"session_id,omitempty"`
	// Inputs are bound as globals before the code runs (JSON values).
	Inputs map[string]json.RawMessage `json:"inputs,omitempty"`
	// Limits ask for tighter limits than the server's; larger values are
	// clamped to the server's maxima.
	Limits *RequestLimits `json:"limits,omitempty"`
	// Lang, when set, must be "py" or "python".
	Lang string `json:"lang,omitempty"`
	// TypeCheck checks the code before it runs, against the session's
	// earlier calls and the server's and the request's stubs; code with
	// problems gets a 422 "type_check_failed" answer with the
	// diagnostics, and nothing runs.
	TypeCheck bool `json:"type_check,omitempty"`
	// Stubs is stub (.pyi) text declaring names the code may use (with
	// TypeCheck).
	Stubs string `json:"stubs,omitempty"`
	// Tools are client tools: functions the code may call that the client
	// answers. A call pauses the run, which is stored: the answer has
	// status "paused", a run_id and the calls, and POST
	// /runs/{run_id}/resume continues it on any instance.
	Tools []ToolSpec `json:"tools,omitempty"`
}

// RequestLimits are per-request execution limits; zero fields take the
// server's value, and larger ones are clamped to it.
type RequestLimits struct {
	DurationMS  int64 `json:"duration_ms,omitempty"`
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	Recursion   int   `json:"recursion,omitempty"`
	OutputBytes int   `json:"output_bytes,omitempty"`
	// ResultBytes bounds the result: the value's encoded size as it leaves
	// the sandbox, and its JSON and repr in the answer.
	ResultBytes int64 `json:"result_bytes,omitempty"`
}

// negative reports whether any of the limits is negative (nil: none is).
func (l *RequestLimits) negative() bool {
	return l != nil && (l.DurationMS < 0 || l.MemoryBytes < 0 || l.Recursion < 0 || l.OutputBytes < 0 || l.ResultBytes < 0)
}

// ExecResponse is the body of a 200 answer to POST /exec and POST
// /runs/{run_id}/resume.
type ExecResponse struct {
	// Status is "completed", or "paused" when the run stopped at client
	// tool calls: RunID, Calls and RunExpires say which and until when.
	Status     string         `json:"status"`
	RunID      string         `json:"run_id,omitempty"`
	Calls      []ToolCallInfo `json:"calls,omitempty"`
	RunExpires string         `json:"run_expires,omitempty"`
	// PreviousRunID, in a paused answer, is the run_id this run replaces:
	// the run was listed again because approved calls of it may have run
	// (ToolCallInfo.MayHaveRun), and the resume that got this answer made
	// nothing.
	PreviousRunID string `json:"previous_run_id,omitempty"`
	SessionID     string `json:"session_id"`
	Stdout        string `json:"stdout"`
	Stderr        string `json:"stderr"`
	// Result is the value of the final expression as JSON (null after a
	// statement, or when the value has no JSON form, or when its JSON text
	// is longer than the result limit; see ResultRepr).
	Result json.RawMessage `json:"result"`
	// ResultRepr is Python's repr() of the value, cut at the result limit.
	ResultRepr string `json:"result_repr"`
	// ResultTruncated is true when Result was left out (null) or
	// ResultRepr was cut because their text is longer than the result
	// limit (possible only for values whose JSON or repr is much longer
	// than the value itself, such as strings of control characters).
	ResultTruncated bool `json:"result_truncated,omitempty"`
	// Error is the exception that ended the code; ExitCode is then 1. An
	// exception raised by a limit is not a 200 answer but a 422 (see
	// ErrorResponse).
	Error    *PythonError `json:"error,omitempty"`
	ExitCode int          `json:"exit_code"`
	// HasState, StateSize and StateHash describe the stored state after the
	// call (StateHash is the hex sha256 of the blob, the ETag of GET /state).
	HasState  bool   `json:"has_state"`
	StateSize int64  `json:"state_size"`
	StateHash string `json:"state_hash"`
	// StateSaved is true when this call stored new state; StateNote says
	// why not when the code succeeded but the state was too large.
	StateSaved bool    `json:"state_saved"`
	StateNote  string  `json:"state_note,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// StateWarning says that the session did not continue from its
	// stored state as it was: the state could not be loaded and the
	// session started empty, or it was rebuilt from its JSON view.
	StateWarning *StateWarning `json:"state_warning,omitempty"`
}

// PythonError is a Python exception in an ExecResponse.
type PythonError struct {
	Type      string  `json:"type"`
	Message   string  `json:"message"`
	Traceback []Frame `json:"traceback"`
	// Text is the traceback as CPython prints it (also in stderr).
	// Message and Text are cut at 64 KiB, and a traceback of more than 100
	// entries keeps its first and last 50.
	Text string `json:"text"`
	// Limit names the resource limit that raised it, as the error code of
	// the 422 answer carrying it ("time_limit", "memory_limit",
	// "recursion_limit", "output_limit", "int_size_limit"); empty otherwise.
	Limit string `json:"limit,omitempty"`
}

// Frame is one traceback entry, outermost first.
type Frame struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Function string `json:"function,omitempty"`
	Source   string `json:"source,omitempty"`
}

var identPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })

const maxInputs = 256

// checkSessionID validates a client-visible session id.
func checkSessionID(id string) *apiError {
	if !apikey.ValidSessionID(id) {
		return &apiError{status: http.StatusBadRequest, code: "invalid_session_id", msg: fmt.Sprintf("session id %q: use 1-128 letters, digits, '_', '-' or '.', not starting with '.'", id)}
	}
	return nil
}

// storeID is where the session id of a namespace lives in the store.
func storeID(ns, id string) string { return apikey.StoreID(ns, id) }

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (h *Handler) exec(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	key, aerr := h.requestKey(r)
	if aerr != nil {
		return aerr
	}
	req, aerr := h.readExec(w, r)
	if aerr != nil {
		return aerr
	}
	inputs, aerr := parseInputs(req.Inputs)
	if aerr != nil {
		return aerr
	}
	limits := h.limits(req.Limits)
	ifState := strings.Trim(strings.TrimPrefix(strings.TrimSpace(r.Header.Get("If-Match")), "W/"), `"`)
	if key != nil {
		canonical, _ := json.Marshal(req)
		key.fingerprint = fingerprint("exec", canonical)
		if req.SessionID == "" {
			req.SessionID = keyedSessionID(key.key)
		}
	}
	if req.SessionID == "" {
		req.SessionID = newSessionID()
	} else if aerr := checkSessionID(req.SessionID); aerr != nil {
		return aerr
	}
	return h.withRunSlot(r, func(ctx context.Context) *apiError {
		start := time.Now()
		var tc *session.TypeCheck
		if req.TypeCheck {
			if tc, aerr = h.typeCheck(ctx, req.Stubs); aerr != nil {
				return aerr
			}
		}
		tools, aerr := parseTools(req.Tools)
		if aerr != nil {
			return aerr
		}
		opts := session.ExecOptions{Inputs: inputs, TypeCheck: tc, Tools: tools, RunTTL: h.opts.RunTTL}
		op := sessionOp{
			key: key,
			// A session waiting for its run's resume runs nothing else (an
			// expired run is abandoned by the call instead).
			refuse: func(s *session.Session) *apiError {
				if p := s.Paused(); p != nil && time.Now().Before(p.Expires) {
					return runPaused(req.SessionID, runID(req.SessionID, p.RunID))
				}
				return nil
			},
			do: func(ctx context.Context, s *session.Session, idem *session.Idempotency) (*session.Result, error) {
				opts.Idempotency = idem
				opts.IfState = ifState
				return s.ExecOptions(ctx, req.Code, opts)
			},
		}
		return h.answer(ctx, w, r, ns, req.SessionID, op, limits, start)
	})
}

// sessionOp is what a request does with its session: run code, or resume
// a paused run.
type sessionOp struct {
	// run is the run_id a resume continues; empty for an execution.
	run string
	// key is the request's idempotency key; nil when it has none.
	key *keyedRequest
	// refuse, once the session is open and before anything runs (before
	// a stream's first frame), returns the answer to a request the
	// session cannot serve, or nil. The session checks again (it may
	// change meanwhile): refuse only answers early. A retried request
	// (key) is answered before refuse is asked.
	refuse func(s *session.Session) *apiError
	// do runs the request's code on the session, with idem (nil without
	// key) for session.ExecOptions or ResumeOptions.
	do func(ctx context.Context, s *session.Session, idem *session.Idempotency) (*session.Result, error)
}

// answer does op on the session and answers the request: as JSON, or as
// a stream of events when the client asks for one.
func (h *Handler) answer(ctx context.Context, w http.ResponseWriter, r *http.Request, ns, sessionID string, op sessionOp, limits runtime.Limits, start time.Time) *apiError {
	release, aerr := h.holdKey(ns, sessionID, op.key)
	if aerr != nil {
		return aerr
	}
	defer release()
	runID := agent.NewRunID()
	execute := func(sink func(agent.Event)) (*ExecResponse, *apiError) {
		resp, replayed, aerr := h.execute(ctx, ns, sessionID, op, limits, start, runID, sink)
		if replayed {
			w.Header().Set(HeaderReplayed, "true")
		}
		return resp, aerr
	}
	if wantsEvents(r) {
		return h.stream(ctx, w, sessionID, runID, func(ctx context.Context, sink func(agent.Event)) (any, *apiError) {
			resp, aerr := execute(sink)
			if aerr != nil {
				return nil, aerr // not a nil *ExecResponse in an interface
			}
			return resp, nil
		})
	}
	resp, aerr := execute(nil)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// execute does op on the session and returns the answer, reporting the
// run's events to sink (nil: none); replayed is true when it is the
// stored answer to a retried request (op.key), which ran nothing.
func (h *Handler) execute(ctx context.Context, ns, sessionID string, op sessionOp, limits runtime.Limits, start time.Time, runID string, sink func(agent.Event)) (resp *ExecResponse, replayed bool, aerr *apiError) {
	out, err := h.run(ctx, ns, sessionID, op, limits, start, runID, sink)
	if out.replay != nil {
		h.metrics.execution("replayed")
		resp, aerr := replay(out.replay, sessionID)
		return resp, true, aerr
	}
	resp, aerr = h.finish(ns, sessionID, op, out, err, limits, start)
	return resp, false, aerr
}

// finish is the answer to op's request, which ran as out and err say.
func (h *Handler) finish(ns, sessionID string, op sessionOp, out outcome, err error, limits runtime.Limits, start time.Time) (*ExecResponse, *apiError) {
	elapsed := time.Since(start)
	if out.duration > 0 && err == nil {
		elapsed = out.duration
	}
	var refused *apiError
	if errors.As(err, &refused) {
		h.metrics.execution("error")
		return nil, refused
	}
	if aerr := keyError(err, sessionID); aerr != nil {
		h.metrics.execution("error")
		return nil, aerr
	}
	if errors.Is(err, session.ErrStateChanged) {
		h.metrics.execution("error")
		return nil, &apiError{status: http.StatusPreconditionFailed, code: "precondition_failed", msg: fmt.Sprintf(
			"session %q's stored state is not the one named by If-Match (it changed since, or the store lost it: GET /state/%s/info says which); nothing ran", sessionID, sessionID)}
	}
	if errors.Is(err, typecheck.ErrNoModule) {
		h.metrics.execution("error")
		return nil, checkerUnavailable(err)
	}
	if aerr := typeCheckError(err); aerr != nil {
		h.metrics.execution("type_error")
		aerr.body.SessionID, aerr.body.DurationMS = sessionID, durationMS(elapsed)
		return nil, aerr
	}
	if aerr := execLimitError(err, out.pyErr, out.resp != nil, limits, h.opts.Session.Limits); aerr != nil {
		h.metrics.execution("limit")
		h.metrics.limit(aerr.code)
		return nil, limitAnswer(aerr, ns, sessionID, out.resp, elapsed)
	}
	if err != nil {
		h.metrics.execution("error")
		if aerr := runError(err, sessionID, op.run); aerr != nil {
			return nil, aerr
		}
		return nil, storeError(err).named(ns, sessionID)
	}
	resp := out.resp
	resp.SessionID = sessionID
	resp.DurationMS = durationMS(elapsed)
	if out.paused != nil {
		setPaused(resp, sessionID, out.paused, h.opts.Functions)
		h.metrics.execution("paused")
		return resp, nil
	}
	if resp.Error != nil {
		h.metrics.execution("exception")
	} else {
		h.metrics.execution("ok")
	}
	if resp.HasState {
		h.metrics.state(resp.StateSize)
	}
	return resp, nil
}

// limitAnswer is the 422 answer aerr to a call of session sessionID (of
// namespace ns) that a limit stopped, with what the call left (resp; nil
// when the session did not open) after elapsed.
func limitAnswer(aerr *apiError, ns, sessionID string, resp *ExecResponse, elapsed time.Duration) *apiError {
	aerr.body = &ErrorResponse{SessionID: sessionID, DurationMS: durationMS(elapsed)}
	if resp != nil {
		b := aerr.body
		b.Stdout, b.Stderr, b.HasState, b.StateSize, b.StateHash = resp.Stdout, resp.Stderr, resp.HasState, resp.StateSize, resp.StateHash
		b.Exception = resp.Error
	}
	return aerr.named(ns, sessionID)
}

// storeAnswer is what a retry of a call of session sessionID (of
// namespace ns) that left res after elapsed, having printed stdout and
// stderr, is answered (session.Idempotency.Answer): finish's answer, its state
// fields left for the replay to fill in.
func (h *Handler) storeAnswer(ns, sessionID string, res *session.Result, stdout, stderr string, limits runtime.Limits, elapsed time.Duration) []byte {
	resp, pyErr := response(res, stdout, stderr, limits.MaxResult)
	if aerr := execLimitError(nil, pyErr, true, limits, h.opts.Session.Limits); aerr != nil {
		aerr = limitAnswer(aerr, ns, sessionID, resp, elapsed)
		return marshal(storedAnswer{Status: aerr.status, Body: marshal(errorBody(aerr))})
	}
	resp.SessionID, resp.DurationMS = sessionID, durationMS(elapsed)
	if res.Paused != nil {
		setPaused(resp, sessionID, res.Paused, h.opts.Functions)
	}
	return marshal(storedAnswer{Status: http.StatusOK, Body: marshal(resp)})
}

// readExec decodes and checks the body of POST /exec.
func (h *Handler) readExec(w http.ResponseWriter, r *http.Request) (*ExecRequest, *apiError) {
	var req ExecRequest
	if aerr := h.readBody(w, r, &req); aerr != nil {
		return nil, aerr
	}
	if strings.TrimSpace(req.Code) == "" {
		return nil, &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "\"code\" is required"}
	}
	switch strings.ToLower(req.Lang) {
	case "", "py", "python", "python3":
	default:
		return nil, &apiError{status: http.StatusBadRequest, code: "unsupported_language", msg: fmt.Sprintf("lang %q: this server runs Python only (\"py\")", req.Lang)}
	}
	if req.Stubs != "" && !req.TypeCheck {
		return nil, &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "\"stubs\" needs \"type_check\": true"}
	}
	if req.Limits.negative() {
		return nil, badRequest("limits must not be negative")
	}
	return &req, nil
}

func tooLarge(code, what string, size, max int64) *apiError {
	msg := fmt.Sprintf("%s is over the %d-byte limit", what, max)
	if size >= 0 {
		msg = fmt.Sprintf("%s is %d bytes, over the %d-byte limit", what, size, max)
	}
	return &apiError{status: http.StatusRequestEntityTooLarge, code: code, msg: msg}
}

// parseInputs converts the JSON inputs to Python values, sorted by name.
func parseInputs(in map[string]json.RawMessage) ([]runtime.Input, *apiError) {
	if len(in) > maxInputs {
		return nil, &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: fmt.Sprintf("%d inputs, at most %d are accepted", len(in), maxInputs)}
	}
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]runtime.Input, 0, len(in))
	for _, name := range names {
		if !identPattern().MatchString(name) {
			return nil, &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: fmt.Sprintf("input name %q is not a Python identifier", name)}
		}
		v, err := object.FromJSON(in[name])
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: fmt.Sprintf("input %q: %v", name, err)}
		}
		out = append(out, runtime.Input{Name: name, Value: v})
	}
	return out, nil
}

// limits clamps a request's limits to the server's maxima.
func (h *Handler) limits(req *RequestLimits) runtime.Limits {
	l := h.opts.Session.Limits
	if req == nil {
		return l
	}
	// Milliseconds past this would overflow a Duration: no limit is longer.
	const maxMS = int64(1<<63-1) / int64(time.Millisecond)
	l.MaxDuration = clamp(time.Duration(min(req.DurationMS, maxMS))*time.Millisecond, l.MaxDuration)
	l.MaxMemory = clamp(req.MemoryBytes, l.MaxMemory)
	// The server's 0 is the interpreter's default depth, not "no maximum":
	// deep recursion is slow to stop, so it is never unbounded here.
	if req.Recursion > 0 {
		l.MaxRecursion = min(req.Recursion, cmp.Or(l.MaxRecursion, runtime.DefaultMaxRecursion))
	}
	l.MaxOutput = clamp(req.OutputBytes, l.MaxOutput)
	l.MaxResult = clamp(req.ResultBytes, l.MaxResult)
	return l
}

// clamp returns the requested value bounded by max, where 0 means "not
// asked" for want and "no maximum" for max.
func clamp[T int | int64 | time.Duration](want, max T) T {
	switch {
	case want <= 0:
		return max
	case max > 0 && want > max:
		return max
	}
	return want
}

// outcome is what run learnt: the answer (nil when the session could not
// be opened) and the Python exception that ended the code, if any; or
// the stored answer to a retried request.
type outcome struct {
	resp   *ExecResponse
	pyErr  *runtime.Error
	paused *session.Paused // the run stopped at client tool calls
	replay *session.Replay // a retried request: nothing ran
	// duration, when set, is the run's duration in the answer stored for
	// a retry, which the answer gives too (it is the same answer).
	duration time.Duration
}

// openSession returns the session lease holds (id of namespace ns) with
// limits and host for the request: the one kept open since an earlier
// request when it is still what the store holds, else opened from the
// store.
func (h *Handler) openSession(ctx context.Context, lease *session.Lease, ns, id string, limits runtime.Limits, host *runtime.Host) (*session.Session, error) {
	opts := session.Options{
		Store:        h.opts.Session.Store,
		Engine:       h.opts.Session.Engine,
		Pool:         h.warmPool(ctx),
		SigningKey:   h.stateKey(ns, id),
		VerifyKeys:   h.legacyKeys(),
		MaxStateSize: h.opts.Session.MaxStateSize,
		Limits:       limits,
		Host:         host,
		Files:        h.files(),
		// Stored state that does not load is kept aside either way.
		FreshOnCorrupt: !h.opts.FailOnCorruptState,
		CaptureOnError: h.opts.Session.CaptureOnError,
		Ephemeral:      h.opts.Session.Ephemeral,
		Telemetry:      h.opts.Session.Telemetry,
	}
	s, err := lease.Session(ctx, &opts)
	if err != nil || lease.Fresh() {
		return s, err
	}
	s.SetLimits(limits)
	s.SetHost(host)
	err = s.Sync(ctx)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil:
		// The store did not answer: opening it afresh would ask again
		// and keep the request waiting twice as long.
		return nil, err
	}
	// Not usable as kept: open it afresh, as with none kept.
	lease.Forget()
	return lease.Session(ctx, &opts)
}

// claim takes session id of namespace ns for a request: a request waits
// for another on the same session (in the keeper's bounded queue) for as
// long as that one may run (limits' time limit), and a session a monty.v1
// connection holds (when the keeper is shared) for as long too; then it
// fails with session.ErrBusy (409 session_busy).
func (h *Handler) claim(ctx context.Context, ns, id string, limits runtime.Limits) (*session.Lease, error) {
	wait := limits.MaxDuration
	if wait <= 0 {
		wait = -1 // as long as the request
	}
	return h.keeper.Claim(ctx, storeID(ns, id), session.ClaimOptions{Who: "another request", Wait: wait})
}

// run opens the stored session id of namespace ns, runs code and stores
// the new state. The answer is filled in as far as the call got, also when
// it fails (what the code printed before a limit stopped it). The run's
// events (run runID: print output, host calls) go to sink when it is not
// nil; they are also where the answer's stdout and stderr come from.
func (h *Handler) run(ctx context.Context, ns, id string, op sessionOp, limits runtime.Limits, start time.Time, runID string, sink func(agent.Event)) (_ outcome, err error) {
	var printed sync.Mutex // guards stdout and stderr
	var stdout, stderr strings.Builder
	host, closeHost, err := h.requestHost()
	if err != nil {
		return outcome{}, err
	}
	defer closeHost()
	lease, err := h.claim(ctx, ns, id, limits)
	if err != nil {
		return outcome{}, err
	}
	defer lease.Release()
	if h.opts.Session.Ephemeral {
		// Every execution starts empty: the session is not kept open.
		defer lease.Forget()
	}
	// A claim lost (its lease lapsed while the store was out of reach)
	// stops the call: another instance may run the session now.
	bound, unbind := lease.Bind(ctx)
	defer unbind()
	defer func() {
		if cause := context.Cause(bound); err != nil && errors.Is(cause, session.ErrLeaseLost) {
			err = fmt.Errorf("%w: %w", store.ErrUnavailable, cause)
		}
	}()
	ctx = bound
	s, err := h.openSession(ctx, lease, ns, id, limits, host)
	if err != nil {
		return outcome{}, err
	}
	defer s.SetHost(nil) // the request's Host (its mounts) is closed
	var idem *session.Idempotency
	var answered time.Duration // the duration_ms of the answer stored for a retry
	if k := op.key; k != nil {
		idem = &session.Idempotency{Key: k.key, Fingerprint: k.fingerprint, Answer: func(res *session.Result) []byte {
			printed.Lock()
			defer printed.Unlock()
			answered = time.Since(start)
			return h.storeAnswer(ns, id, res, stdout.String(), stderr.String(), limits, answered)
		}}
		// A retry is answered before the session's state is judged (the
		// run the first request resumed is over).
		if res, err := s.Replayed(idem); err != nil {
			return outcome{}, err
		} else if res != nil {
			return outcome{replay: res.Replay}, nil
		}
	}
	if op.refuse != nil {
		if aerr := op.refuse(s); aerr != nil {
			return outcome{}, aerr
		}
	}
	// The recorder routes print output to the events (bounded by
	// limits.MaxOutput, both streams together) and reports the calls of
	// Options.Functions.
	stream := runtime.Stdout
	rec, rctx := agent.NewRecorder(ctx, runID, func(e agent.Event) {
		switch e.Type {
		case agent.TextStart:
			stream = e.Stream
		case agent.TextContent:
			printed.Lock()
			if stream == runtime.Stderr {
				stderr.WriteString(e.Delta)
			} else {
				stdout.WriteString(e.Delta)
			}
			printed.Unlock()
		}
		if sink != nil {
			sink(e)
		}
	})
	res, err := op.do(rctx, s, idem)
	if res != nil && res.Replay != nil {
		// A racing retry on another instance stored first.
		rec.Finish(nil, nil)
		return outcome{replay: res.Replay}, nil
	}
	// How the state was loaded: at Open, or by the call when another
	// instance had continued the session (told once per load).
	var warning *StateWarning
	if r, ok := s.RestoreNotice(); ok {
		warning = h.restoreWarning(ctx, ns, id, r)
	}
	switch {
	case err != nil:
		rec.Finish(nil, err)
	case res.Paused != nil:
		rec.Finish(nil, nil)
		if sink != nil {
			reportCalls(sink, runID, res.Paused.Calls, h.opts.Functions)
		}
	case res.Err != nil:
		rec.Finish(nil, res.Err)
	default:
		rec.Finish(res.Value, nil)
	}
	if res != nil {
		h.logNotSaved(ctx, ns, id, res)
	}
	printed.Lock()
	defer printed.Unlock()
	if err != nil && res != nil {
		failed := *res
		failed.Value = nil // no result without an outcome
		res = &failed
	}
	out := outcome{duration: answered}
	out.resp, out.pyErr = response(res, stdout.String(), stderr.String(), limits.MaxResult)
	out.resp.StateWarning = warning
	if res != nil {
		out.paused = res.Paused
	}
	return out, err
}

// response is the answer to a call that left res (nil: the call failed
// before it had an outcome), having printed stdout and stderr, its
// result at most maxResult bytes; and the Python exception the code
// raised, if any.
func response(res *session.Result, stdout, stderr string, maxResult int64) (*ExecResponse, *runtime.Error) {
	resp := &ExecResponse{Status: StatusCompleted, Stdout: stdout, Stderr: stderr, Result: json.RawMessage("null")}
	if res == nil {
		return resp, nil
	}
	resp.HasState, resp.StateSize, resp.StateHash = res.HasState, res.StateSize, res.StateHash
	resp.StateSaved, resp.StateNote = res.Saved, res.NotSavedReason
	if e := res.Err; e != nil {
		resp.ExitCode = 1
		resp.Error = pythonError(e)
		if resp.Stderr != "" && !strings.HasSuffix(resp.Stderr, "\n") {
			resp.Stderr += "\n"
		}
		resp.Stderr += strings.TrimRight(resp.Error.Text, "\n") + "\n"
	}
	if res.Value != nil {
		setResult(resp, res.Value, maxResult)
	}
	return resp, res.Err
}

// setResult puts the value's JSON and repr in the answer, each at most
// max bytes: the runtime bounded the value's encoded size by max already,
// but its JSON or repr can be several times longer.
func setResult(resp *ExecResponse, v object.Value, max int64) {
	repr := object.Repr(v)
	if max > 0 && int64(len(repr)) > max {
		repr = truncate(repr, int(max))
		resp.ResultTruncated = true
	}
	resp.ResultRepr = repr
	js, err := object.ToJSON(v)
	switch {
	case err != nil:
	case max > 0 && int64(len(js)) > max:
		resp.ResultTruncated = true
	default:
		resp.Result = js
	}
}

// pythonError is the answer's form of an exception, its texts bounded.
func pythonError(e *runtime.Error) *PythonError {
	text := e.Text
	if text == "" {
		text = e.Error()
	}
	pe := &PythonError{Type: e.Type, Message: truncate(e.Message, maxErrorText), Text: truncate(text, maxErrorText),
		Traceback: []Frame{}, Limit: e.Limit.String()}
	frames := e.Traceback
	omitted := 0
	if len(frames) > maxFrames {
		omitted = len(frames) - maxFrames
	}
	for i, f := range frames {
		if omitted > 0 && i >= maxFrames/2 && i < maxFrames/2+omitted {
			if i == maxFrames/2 {
				pe.Traceback = append(pe.Traceback, Frame{File: "…", Function: fmt.Sprintf("[%d more frames not shown]", omitted)})
			}
			continue
		}
		pe.Traceback = append(pe.Traceback, Frame{File: truncate(f.Filename, maxFrameSource), Line: f.Line,
			Function: truncate(f.Name, maxFrameSource), Source: truncate(f.Source, maxFrameSource)})
	}
	return pe
}

// errMountsUnavailable fails a request whose mounts do not open (a host
// directory removed since the server started).
var errMountsUnavailable = errors.New("httpapi: the server's mounts cannot be opened; the operator's log has the detail")

// requestHost opens what one request's code may reach outside the
// sandbox: the operator's mounts, opened afresh for this request (so an
// overlay's writes are this request's alone), then the OS handler. Call
// the function it returns when the request is done.
//
// The host functions of Options.Functions, when set, are offered too.
func (h *Handler) requestHost() (*runtime.Host, func(), error) {
	var chain runtime.Chain
	done := func() {}
	if len(h.opts.Mounts) > 0 {
		t, err := vfs.OpenMounts(h.opts.Mounts...)
		if err != nil {
			// The detail names host directories: for the operator's log
			// only, never for the client.
			h.log.Error("opening the mounts", "err", err)
			return nil, nil, errMountsUnavailable
		}
		chain, done = append(chain, t), func() { _ = t.Close() }
	}
	if h.opts.OS != nil {
		chain = append(chain, h.opts.OS)
	}
	var host *runtime.Host
	switch {
	case h.opts.Functions != nil:
		host = h.opts.Functions.Host()
	case len(chain) == 0:
		return nil, done, nil
	default:
		host = &runtime.Host{}
	}
	if len(chain) > 0 {
		host.OS = chain
	}
	return host, done, nil
}
