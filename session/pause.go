package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
)

// DefaultRunTTL is how long a paused run waits for Resume when
// ExecOptions.RunTTL is 0.
const DefaultRunTTL = time.Hour

// ClientTool is a function the code may call that the session's caller
// answers (an agent's client, a browser): the run stops at the call and is
// stored paused, dump and all, so that Resume can continue it here or in
// another process, later.
type ClientTool struct {
	// Name is the name the code calls.
	Name string `json:"name"`
	// Async makes a call return an awaitable at once, as an async def
	// does, so that asyncio.gather collects several calls before the run
	// stops; the code must await it. A sync tool (the default) stops the
	// run at the call, and its result is the call's value.
	Async bool `json:"async,omitempty"`
}

// ToolCall is a call of a client tool the run waits on.
type ToolCall struct {
	// ID identifies the call in Resume's results.
	ID     string
	Name   string
	Args   []object.Value
	Kwargs []object.Pair // keys are object.Str
	// Blocking marks the sync call the code is stopped at: the next
	// Resume must answer it, and only it (the async calls listed with it
	// are answered when the code awaits them).
	Blocking bool
	// Object is the host object of a method call the caller answers (a
	// method whose runtime.Function is External, such as an MCP tool that
	// waits for a person's approval); nil for a client tool's call. Name
	// is then the method's name.
	Object *object.UUID
}

// Paused describes a run stopped at client tool calls.
type Paused struct {
	// RunID names the run for Resume.
	RunID string
	// Calls are the calls the run waits on. For a sync tool, the one call
	// the code is stopped at comes last and must be answered; async calls
	// awaited together may be answered all at once or some at a time.
	Calls []ToolCall
	// Expires is when the run stops waiting: afterwards Resume fails with
	// ErrRunExpired and the next call of the session abandons the run.
	Expires time.Time
}

// ToolResult answers one ToolCall: its value, or the exception the call
// raises in the code when Error is set.
type ToolResult struct {
	ID    string
	Value object.Value
	Error *runtime.Exception
}

// Errors of paused runs.
var (
	// ErrRunPaused: the session has a paused run, so it cannot run other
	// code until the run is resumed (or expires).
	ErrRunPaused = errors.New("session: a run is paused at client tool calls")
	// ErrRunNotPaused: no run with that id is paused in the session (it
	// was resumed already, expired and was abandoned, or never existed).
	ErrRunNotPaused = errors.New("session: no such paused run")
	// ErrRunExpired: the run waited longer than its TTL.
	ErrRunExpired = errors.New("session: the paused run has expired")
	// ErrBadResults: the results do not answer the run's calls.
	ErrBadResults = errors.New("session: the results do not answer the paused run's calls")
	// ErrRunUnloadable: the stored state holds a paused run this build
	// cannot continue (another Monty version wrote it, or the session is
	// opened JSON-only); the state stays stored for a build that can.
	ErrRunUnloadable = errors.New("session: the paused run cannot be continued by this build")
)

// pausedRun is the stored record of a paused run (blob version 4).
type pausedRun struct {
	ID      string       `json:"id"`
	Code    string       `json:"code"`
	Expires time.Time    `json:"expires"`
	Tools   []ClientTool `json:"tools"`
	Calls   []storedCall `json:"calls"`
	// Blocking is the id of the sync call the code is stopped at; nil
	// when it awaits futures.
	Blocking *uint32 `json:"blocking,omitempty"`
	TTL      int64   `json:"ttl_ns"`
	// Trace is the W3C traceparent of the execution that paused the run,
	// which the resume's span links to; empty when it was not traced.
	Trace string `json:"trace,omitempty"`
}

// storedCall is a ToolCall as stored: its arguments CBOR-encoded.
type storedCall struct {
	ID     uint32 `json:"id"`
	Name   string `json:"name"`
	Args   []byte `json:"args"`   // a tuple
	Kwargs []byte `json:"kwargs"` // a dict
	// Object is the host object of a method call (its UUID, canonical
	// form); empty for a function.
	Object string `json:"object,omitempty"`
}

// check validates a decoded record.
func (r *pausedRun) check() error {
	if r.ID == "" || len(r.Calls) == 0 {
		return errors.New("no id or no calls")
	}
	seen := map[uint32]bool{}
	for _, c := range r.Calls {
		if seen[c.ID] || c.Name == "" {
			return fmt.Errorf("call %d repeated or unnamed", c.ID)
		}
		seen[c.ID] = true
		if _, _, err := c.decode(); err != nil {
			return err
		}
		if _, err := c.object(); err != nil {
			return err
		}
	}
	if r.Blocking != nil && !seen[*r.Blocking] {
		return fmt.Errorf("blocking call %d is not among the calls", *r.Blocking)
	}
	return nil
}

// object is the host object a method call was made on; nil for a
// function.
func (c storedCall) object() (*object.UUID, error) {
	if c.Object == "" {
		return nil, nil
	}
	id, err := object.ParseUUID(c.Object)
	if err != nil {
		return nil, fmt.Errorf("call %d: %w", c.ID, err)
	}
	return &id, nil
}

func (c storedCall) decode() ([]object.Value, []object.Pair, error) {
	a, err := object.Decode(c.Args)
	if err != nil {
		return nil, nil, fmt.Errorf("call %d arguments: %w", c.ID, err)
	}
	k, err := object.Decode(c.Kwargs)
	if err != nil {
		return nil, nil, fmt.Errorf("call %d keyword arguments: %w", c.ID, err)
	}
	args, ok1 := a.(object.Tuple)
	kwargs, ok2 := k.(object.Dict)
	if !ok1 || !ok2 {
		return nil, nil, fmt.Errorf("call %d: arguments of the wrong shape", c.ID)
	}
	return args, kwargs, nil
}

// activeRun is the paused run of a live session.
type activeRun struct {
	exec *runtime.Execution
	rec  *pausedRun
}

// Paused describes the session's paused run; nil when none.
func (s *Session) Paused() *Paused {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	return s.run.rec.public()
}

func (r *pausedRun) public() *Paused {
	p := &Paused{RunID: r.ID, Expires: r.Expires}
	for _, c := range r.Calls {
		args, kwargs, _ := c.decode() // checked when stored or loaded
		obj, _ := c.object()
		p.Calls = append(p.Calls, ToolCall{ID: strconv.FormatUint(uint64(c.ID), 10), Name: c.Name, Args: args, Kwargs: kwargs,
			Blocking: r.Blocking != nil && *r.Blocking == c.ID, Object: obj})
	}
	return p
}

// adoptRun takes the paused execution a loaded blob holds.
func (s *Session) adoptRun(b *blob, paused *runtime.Execution) error {
	switch {
	case b.Run == nil && paused == nil:
		return nil
	case b.Run == nil || paused == nil:
		return corrupt("the paused run and the dump disagree")
	}
	s.run = &activeRun{exec: paused, rec: b.Run}
	return nil
}

// settleRun lets a call run: an expired paused run is abandoned (its code
// gets an exception it cannot catch; the globals it set stay), a live one
// refuses the call.
func (s *Session) settleRun(ctx context.Context) error {
	if s.run == nil {
		return nil
	}
	if err := s.syncRun(ctx); err != nil || s.run == nil {
		return err // resumed elsewhere meanwhile, maybe
	}
	if time.Now().Before(s.run.rec.Expires) {
		return fmt.Errorf("%w: session %s, run %s (resume it, or wait until %s when it expires)", ErrRunPaused, s.id, s.run.rec.ID, s.run.rec.Expires.Format(time.RFC3339))
	}
	s.run.exec.Close(ctx)
	s.run = nil
	return nil
}

// feed runs code, with the client tools of o as External functions.
func (s *Session) feed(ctx context.Context, code string, inputs []runtime.Input, o ExecOptions) (object.Value, error) {
	ttl := o.RunTTL
	if ttl <= 0 {
		ttl = DefaultRunTTL
	}
	// What a run that pauses records (the Host may have External
	// functions of its own, too).
	s.pending = &pausedRun{Code: code, Tools: slices.Clone(o.Tools), TTL: int64(ttl)}
	if len(o.Tools) == 0 {
		return s.host.Feed(ctx, s.repl, code, inputs...)
	}
	if s.opts.JSONOnly {
		return nil, fmt.Errorf("%w: client tools need the interpreter's dump, which a JSONOnly session does not keep", runtime.ErrInvalidOption)
	}
	host, err := s.toolHost(o.Tools)
	if err != nil {
		return nil, err
	}
	return host.Feed(ctx, s.repl, code, inputs...)
}

// toolHost is the session's host with tools as External functions.
func (s *Session) toolHost(tools []ClientTool) (*runtime.Host, error) {
	h := *s.host
	h.Functions = make(map[string]runtime.Function, len(s.host.Functions)+len(tools))
	for name, f := range s.host.Functions {
		h.Functions[name] = f
	}
	for _, t := range tools {
		if _, taken := h.Functions[t.Name]; taken || t.Name == "" {
			return nil, fmt.Errorf("%w: client tool %q: the name is empty, given twice, or a host function's", runtime.ErrInvalidOption, t.Name)
		}
		h.Functions[t.Name] = runtime.Function{External: true, Async: t.Async}
	}
	return &h, nil
}

// pause records the run a Drive suspended: its calls, merged with the ones
// still outstanding from before.
func (s *Session) pause(sp *runtime.Suspended) *Paused {
	rec := s.pending
	if s.run != nil {
		rec = s.run.rec // a resumed run paused again
	}
	known := map[uint32]storedCall{}
	for _, c := range rec.Calls {
		known[c.ID] = c
	}
	for _, c := range sp.Calls {
		known[c.CallID] = storeCall(c)
	}
	next := &pausedRun{Code: rec.Code, Tools: rec.Tools, TTL: rec.TTL, ID: newRunID(),
		Expires: time.Now().Add(time.Duration(rec.TTL)).UTC().Truncate(time.Millisecond)}
	// The run waits on these: the outstanding futures and the new calls;
	// for a sync call, that call last.
	outstanding := s.outstanding()
	for _, id := range sp.Waiting {
		outstanding[id] = true
	}
	for _, c := range sp.Calls {
		outstanding[c.CallID] = true
	}
	if p, ok := s.pauseOf(); ok {
		next.Blocking = &p
	}
	for id := range outstanding {
		if c, ok := known[id]; ok && (next.Blocking == nil || id != *next.Blocking) {
			next.Calls = append(next.Calls, c)
		}
	}
	slices.SortFunc(next.Calls, func(a, b storedCall) int { return int(a.ID) - int(b.ID) })
	if next.Blocking != nil {
		next.Calls = append(next.Calls, known[*next.Blocking])
	}
	s.run = &activeRun{exec: s.repl.Execution(), rec: next}
	s.pending = nil
	return next.public()
}

// savePause stores the state of a run paused at res.Paused's calls, under
// a span of its own. A paused run that is not stored cannot be resumed: it
// is over, and res.Paused is cleared.
func (s *Session) savePause(ctx context.Context, res *Result, tc *typecheck.Context) error {
	s.run.rec.Trace = telemetry.Traceparent(ctx)
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

// pauseAttrs describe a pause in its span: the run, and the tools it
// waits on.
func pauseAttrs(p *Paused) []attribute.KeyValue {
	var tools []string
	for _, c := range p.Calls {
		if name := telemetry.Clip(c.Name); !slices.Contains(tools, name) {
			tools = append(tools, name)
		}
	}
	return []attribute.KeyValue{telemetry.AttrRunID.String(p.RunID), telemetry.AttrToolCalls.Int(len(p.Calls)), telemetry.AttrTools.StringSlice(tools)}
}

// outstanding are the async calls of the paused run still unanswered.
func (s *Session) outstanding() map[uint32]bool {
	out := map[uint32]bool{}
	if s.run != nil {
		for _, c := range s.run.rec.Calls {
			if b := s.run.rec.Blocking; b == nil || c.ID != *b {
				out[c.ID] = true
			}
		}
	}
	return out
}

// pauseOf is the id of the sync call the REPL's feed is stopped at.
func (s *Session) pauseOf() (uint32, bool) {
	e := s.repl.Execution()
	if e == nil {
		return 0, false
	}
	if c, ok := e.Pause().(*runtime.FunctionCall); ok {
		return c.CallID, true
	}
	return 0, false
}

// CheckResults reports whether results answer the calls of p as Resume
// takes them: nil, or an error matching ErrBadResults that says why not.
// Resume checks the same; a caller checks first to refuse results before
// it commits to an answer (a stream's first frame).
func (p *Paused) CheckResults(results []ToolResult) error {
	ids := make([]uint32, 0, len(p.Calls))
	var blocking *uint32
	for _, c := range p.Calls {
		n, err := strconv.ParseUint(c.ID, 10, 32)
		if err != nil {
			continue // not one of ours: no result can answer it
		}
		id := uint32(n)
		ids = append(ids, id)
		if c.Blocking {
			blocking = &id
		}
	}
	_, err := checkResults(ids, blocking, results)
	return err
}

// checkResults checks results against the calls ids a run waits on, the
// blocking one (nil: none) answered alone, and returns them by call id,
// a result with neither value nor error taken as None.
func checkResults(ids []uint32, blocking *uint32, results []ToolResult) (map[uint32]ToolResult, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: no results", ErrBadResults)
	}
	byID := map[uint32]ToolResult{}
	for _, res := range results {
		n, err := strconv.ParseUint(res.ID, 10, 32)
		id := uint32(n)
		_, dup := byID[id]
		switch {
		case err != nil || !slices.Contains(ids, id):
			return nil, fmt.Errorf("%w: %q is not a call of this run", ErrBadResults, res.ID)
		case dup:
			return nil, fmt.Errorf("%w: call %s is answered twice", ErrBadResults, res.ID)
		case res.Error != nil && res.Error.Type == "":
			return nil, fmt.Errorf("%w: call %s: an error needs a type", ErrBadResults, res.ID)
		}
		if res.Value == nil && res.Error == nil {
			res.Value = object.None{}
		}
		byID[id] = res
	}
	if blocking != nil {
		if _, ok := byID[*blocking]; !ok || len(byID) != 1 {
			return nil, fmt.Errorf("%w: the run is stopped at call %d, which must be answered, alone", ErrBadResults, *blocking)
		}
	}
	return byID, nil
}

func newRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// snapshotUnlessPaused is snapshot, except that a paused run cannot run
// the view's code: the stored view and names stay those of the last
// completed call.
func (s *Session) snapshotUnlessPaused(ctx context.Context) (names []string, view []byte, omitted []string, err error) {
	if s.run == nil {
		return s.snapshot(ctx)
	}
	if s.saved != nil {
		return s.saved.Names, s.saved.JSON, nil, nil
	}
	return []string{}, []byte("{}"), nil, nil
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
func (s *Session) Resume(ctx context.Context, runID string, results []ToolResult) (res *Result, err error) {
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
	e, host, waiting, resumeErr, err := s.resumeRun(ctx, runID, results)
	if err != nil {
		return nil, err
	}
	rec := s.run.rec
	span.Link(rec.Trace)
	err = resumeErr
	var v object.Value
	if err == nil {
		if e.Done() {
			v = e.Value()
		} else {
			v, err = host.Continue(ctx, e, waiting)
		}
	}
	var suspended *runtime.Suspended
	if err == nil || !errors.As(err, &suspended) {
		s.run = nil // over, one way or another (a failed resume reloads it)
	} else {
		s.run = &activeRun{exec: e, rec: &pausedRun{Code: rec.Code, Tools: rec.Tools, TTL: rec.TTL, Calls: rec.remaining(results)}}
	}
	// An exception the code raised ends the run and is stored; a limit
	// (time, memory, ...) leaves the run paused as it was stored.
	capture := runtime.LimitOf(err) == runtime.NoLimit
	return s.finishCall(ctx, rec.Code, v, err, capture)
}

// resumeRun hands results to the paused run runID, under a span of its
// own. A non-nil err means nothing was resumed. Otherwise the run goes on
// from e, driven by host, with waiting still unanswered; resumed is the
// error of handing the results over, which ends the run as the error of a
// call does.
func (s *Session) resumeRun(ctx context.Context, runID string, results []ToolResult) (e *runtime.Execution, host *runtime.Host, waiting []uint32, resumed, err error) {
	ctx, span := telemetry.Start(ctx, telemetry.SpanResume, trace.SpanKindInternal,
		telemetry.AttrRunID.String(telemetry.Clip(runID)), telemetry.AttrToolCalls.Int(len(results)))
	defer func() { telemetry.End(span, errors.Join(err, resumed)) }()
	if err := s.syncRun(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	if s.run == nil || s.run.rec.ID != runID {
		return nil, nil, nil, nil, fmt.Errorf("%w: session %s has no paused run %q (resumed already, abandoned after expiring, or never made)", ErrRunNotPaused, s.id, runID)
	}
	rec := s.run.rec
	if !time.Now().Before(rec.Expires) {
		return nil, nil, nil, nil, fmt.Errorf("%w: run %s expired at %s", ErrRunExpired, runID, rec.Expires.Format(time.RFC3339))
	}
	answer, waiting, err := rec.answer(results)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if s.it.Dead() != nil || s.it.Outdated() {
		if err := s.rollback(ctx); err != nil {
			return nil, nil, nil, nil, err
		}
		if s.run == nil || s.run.rec.ID != runID {
			return nil, nil, nil, nil, fmt.Errorf("%w: session %s lost run %q while restoring its state", ErrRunNotPaused, s.id, runID)
		}
	}
	s.it.SetLimits(s.opts.Limits)
	s.it.SetPrintFunc(s.opts.Print)
	if host, err = s.toolHost(rec.Tools); err != nil {
		return nil, nil, nil, nil, corrupt("paused run tools: %v", err)
	}
	e = s.run.exec
	return e, host, waiting, e.Resume(ctx, answer), nil
}

// answer turns results into the answer of the run's pause, and lists the
// async calls still waiting after it.
func (r *pausedRun) answer(results []ToolResult) (runtime.Answer, []uint32, error) {
	ids := make([]uint32, len(r.Calls))
	for i, c := range r.Calls {
		ids[i] = c.ID
	}
	byID, err := checkResults(ids, r.Blocking, results)
	if err != nil {
		return runtime.Answer{}, nil, err
	}
	if r.Blocking != nil {
		res := byID[*r.Blocking]
		var waiting []uint32
		for _, c := range r.Calls {
			if c.ID != *r.Blocking {
				waiting = append(waiting, c.ID)
			}
		}
		if res.Error != nil {
			return runtime.Raise(res.Error.Type, res.Error.Message), waiting, nil
		}
		return runtime.Return(res.Value), waiting, nil
	}
	var futures []runtime.FutureResult
	var waiting []uint32
	for _, c := range r.Calls {
		res, ok := byID[c.ID]
		if !ok {
			waiting = append(waiting, c.ID)
			continue
		}
		futures = append(futures, runtime.FutureResult{CallID: c.ID, Value: res.Value, Err: res.Error})
	}
	return runtime.Resolve(futures...), waiting, nil
}

// remaining are the calls results leave unanswered (results were checked
// by answer).
func (r *pausedRun) remaining(results []ToolResult) []storedCall {
	answered := map[uint64]bool{}
	for _, res := range results {
		n, _ := strconv.ParseUint(res.ID, 10, 32)
		answered[n] = true
	}
	var out []storedCall
	for _, c := range r.Calls {
		if !answered[uint64(c.ID)] {
			out = append(out, c)
		}
	}
	return out
}

// storeCall encodes a call for the run record. Arguments that cannot be
// encoded (nested past the transfer depth) are stored as their repr, so
// that what the code did never makes its own state unloadable.
func storeCall(c *runtime.FunctionCall) storedCall {
	args, err := object.Encode(object.Tuple(c.Args))
	if err != nil {
		reprs := make(object.Tuple, len(c.Args))
		for i, a := range c.Args {
			reprs[i] = object.Str(object.Repr(a))
		}
		args, _ = object.Encode(reprs)
	}
	kwargs, err := object.Encode(object.Dict(c.Kwargs))
	if err != nil {
		reprs := make(object.Dict, len(c.Kwargs))
		for i, kw := range c.Kwargs {
			reprs[i] = object.Pair{Key: kw.Key, Value: object.Str(object.Repr(kw.Value))}
		}
		kwargs, _ = object.Encode(reprs)
	}
	sc := storedCall{ID: c.CallID, Name: c.Name, Args: args, Kwargs: kwargs}
	if c.ObjectID != nil {
		sc.Object = c.ObjectID.String()
	}
	return sc
}

// syncRun reloads the state when the store holds a newer one: a run paused
// or resumed by another session of the same id changes what this one may
// do.
func (s *Session) syncRun(ctx context.Context) error {
	info, err := s.opts.Store.Stat(ctx, s.id)
	switch {
	case errors.Is(err, store.ErrNotFound) && s.version == "":
		return nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	case err == nil && info.Version == s.version:
		return nil
	}
	return s.reload(ctx)
}
