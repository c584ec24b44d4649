package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
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
	ID string
	// RunID is the paused run the call belongs to (Paused.RunID).
	RunID  string
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
	// MayHaveRun marks an approved call whose resume claimed the run and
	// then died or failed before its outcome was stored: the call may
	// have run. The run was listed again (Paused.Previous) so that a
	// person decides anew; approving it makes the call again.
	MayHaveRun bool
	// IdempotencyKey is the same for every attempt at this call, across
	// resumes and processes (IdempotencyKey): an approved MCP call sends
	// it in its request's _meta, so that a server can deduplicate. Empty
	// in Inspection.Paused.
	IdempotencyKey string
}

// Text is the call as Python spells it, named name (the function, or the
// method as the code calls it, "github.delete_repo"): its arguments'
// reprs, keyword arguments last.
func (c ToolCall) Text(name string) string {
	parts := make([]string, 0, len(c.Args)+len(c.Kwargs))
	for _, a := range c.Args {
		parts = append(parts, object.Repr(a))
	}
	for _, kw := range c.Kwargs {
		k, _ := kw.Key.(object.Str)
		parts = append(parts, string(k)+"="+object.Repr(kw.Value))
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
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
	// Previous is the run id this pause replaces when the run was listed
	// again because its approved calls may have run (ToolCall.MayHaveRun):
	// a Resume of Previous is answered with this pause, nothing made.
	Previous string
	// Claim is set while a resume claims the run to make its approved
	// calls (ResumeOptions.Claim): other resumes fail with ErrRunClaimed
	// until it is done or its lease lapses.
	Claim *Claim
}

// ToolResult answers one ToolCall: its value, or the exception the call
// raises in the code when Error is set.
type ToolResult struct {
	ID    string
	Value object.Value
	Error *runtime.Exception
	// Decision, for the answer to a call that waited for a person's
	// approval, is what was decided and what came of it: Resume stores
	// it with the session (Session.Decisions) with the run's outcome.
	Decision *Decision
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
	// Origin names the execution across its pauses (the id of its first
	// pause): with the session and a call id, it makes the call's
	// idempotency key. Absent in records of older builds (origin()).
	Origin string `json:"origin,omitempty"`
	// Previous is the run id this record replaces when it was listed
	// again after a lost claim.
	Previous string `json:"previous,omitempty"`
	// Claim is set while a resume makes the run's approved calls.
	Claim *runClaim `json:"claim,omitempty"`
	// Uncertain are the ids of calls that may have run (a claim lost).
	Uncertain []uint32 `json:"may_have_run,omitempty"`
	// Driver names the surface whose feed waits on this run's approval
	// (a Driven's, AwaitApproval): a resume stores its decisions
	// (Decided) for that surface, which makes the approved calls; it
	// continues nothing itself.
	Driver string `json:"driver,omitempty"`
	// Decided are the decisions a resume stored for the driver.
	Decided []drivenDecision `json:"decided,omitempty"`
}

// drivenDecision is a decision on a call of a driver's run, stored for
// the driver to carry out.
type drivenDecision struct {
	Call    uint32    `json:"call"`
	Approve bool      `json:"approve"`
	Who     string    `json:"who"`
	At      time.Time `json:"at"`
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

// public describes the run of the session stored under sid for the
// caller who answers it; with sid "" (not known), without idempotency
// keys.
func (r *pausedRun) public(sid string) *Paused {
	p := &Paused{RunID: r.ID, Expires: r.Expires, Previous: r.Previous, Claim: r.Claim.public()}
	for _, c := range r.Calls {
		args, kwargs, _ := c.decode() // checked when stored or loaded
		obj, _ := c.object()
		id := strconv.FormatUint(uint64(c.ID), 10)
		p.Calls = append(p.Calls, ToolCall{ID: id, RunID: r.ID, Name: c.Name, Args: args, Kwargs: kwargs,
			Blocking: r.Blocking != nil && *r.Blocking == c.ID, Object: obj,
			MayHaveRun: slices.Contains(r.Uncertain, c.ID)})
		if sid != "" {
			p.Calls[len(p.Calls)-1].IdempotencyKey = IdempotencyKey(sid, r.origin(), id)
		}
	}
	return p
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

// withTools is host with tools as External functions.
func withTools(host *runtime.Host, tools []ClientTool) (*runtime.Host, error) {
	h := *host
	h.Functions = make(map[string]runtime.Function, len(host.Functions)+len(tools))
	for name, f := range host.Functions {
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
		// Only the id as the run gave it ("1", never "01" or "+1"):
		// callers look calls up by it, and another spelling of a call
		// that waits for approval must not pass for another call.
		case err != nil || res.ID != strconv.FormatUint(n, 10) || !slices.Contains(ids, id):
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
