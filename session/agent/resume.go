package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/tools"
)

// ResumeToolName is the name of the tool that answers a paused run's
// client tool calls (Executor.ResumeTool).
const ResumeToolName = "resume_python"

// PausedRun is a run stopped at client tool calls, in a Result.
type PausedRun struct {
	RunID string `json:"run_id"`
	// SessionID is the session_id the call named ("" for the
	// conversation's session): resume_python needs it too.
	SessionID string       `json:"session_id,omitempty"`
	Calls     []PausedCall `json:"calls"`
	Expires   time.Time    `json:"expires"`
	// PreviousRunID is the run id this pause replaces when the run was
	// listed again because approved calls of it may have run
	// (PausedCall.MayHaveRun); a resume of it got this pause, nothing
	// made.
	PreviousRunID string `json:"previous_run_id,omitempty"`
}

// PausedCall is one call the run waits on, its arguments as JSON (a value
// without a JSON form as its repr, a string).
type PausedCall struct {
	ID     string                     `json:"id"`
	Name   string                     `json:"name"`
	Args   []json.RawMessage          `json:"args"`
	Kwargs map[string]json.RawMessage `json:"kwargs"`
	// Call is the call as Python would spell it, for the model.
	Call string `json:"call"`
	// Blocking marks the sync call the code is stopped at: answer it,
	// alone.
	Blocking bool `json:"blocking,omitempty"`
	// Approval marks a call of an MCP tool that waits for a person's
	// approval (mcpclient.Server.Approve): answer it with "approve", not a value.
	Approval bool `json:"approval,omitempty"`
	// MayHaveRun marks an approved call whose resume stopped (its process
	// died, or it failed) after it claimed the run and before the outcome
	// was stored: the call may have run. Approving it again makes it
	// again (with the same idempotency key); refusing it raises
	// PermissionError in the code.
	MayHaveRun bool `json:"may_have_run,omitempty"`
}

// pausedOf describes a paused run for the model; reg names the calls
// that wait for approval.
func pausedOf(p *session.Paused, sessionID string, reg *tools.Registry) *PausedRun {
	out := &PausedRun{RunID: p.RunID, SessionID: sessionID, Expires: p.Expires, PreviousRunID: p.Previous}
	for _, c := range p.Calls {
		pc := PausedCall{ID: c.ID, Name: c.Name, Blocking: c.Blocking, MayHaveRun: c.MayHaveRun,
			Args: make([]json.RawMessage, len(c.Args)), Kwargs: map[string]json.RawMessage{}}
		pc.Name, pc.Approval = ApprovalName(reg, c)
		for i, a := range c.Args {
			pc.Args[i] = tools.ValueJSON(a)
		}
		for _, kw := range c.Kwargs {
			k, _ := kw.Key.(object.Str)
			pc.Kwargs[string(k)] = tools.ValueJSON(kw.Value)
		}
		pc.Call = c.Text(pc.Name)
		out.Calls = append(out.Calls, pc)
	}
	return out
}

// pausedText tells the model how to answer a paused run.
func pausedText(p *PausedRun) string {
	var b strings.Builder
	if p.PreviousRunID != "" {
		fmt.Fprintf(&b, "Run %q was not resumed: the resume that claimed it to make its approved calls stopped before their outcome was stored, "+
			"so the calls marked below may have run already. Nothing was done now: ask the person again, telling them so. ", p.PreviousRunID)
	}
	fmt.Fprintf(&b, "The code is paused at calls you answer yourself. Call %s with run_id %q", ResumeToolName, p.RunID)
	if p.SessionID != "" {
		fmt.Fprintf(&b, " and session_id %q", p.SessionID)
	}
	blocking := slices.ContainsFunc(p.Calls, func(c PausedCall) bool { return c.Blocking })
	if blocking {
		b.WriteString(" and the result of the call the code is stopped at (the others are answered at a later pause):")
	} else {
		b.WriteString(" and results for these calls (all, or some for now):")
	}
	approvals := false
	for _, c := range p.Calls {
		mark := ""
		if c.Approval {
			mark, approvals = " (needs a person's approval: ask them)", true
		}
		if c.MayHaveRun {
			mark += " (may have run already: approving it makes it again)"
		}
		if c.Blocking {
			mark += " (answer this one now)"
		}
		fmt.Fprintf(&b, "\n- id %q: %s%s", c.ID, c.Call, mark)
	}
	b.WriteString("\nA result is {\"id\": ..., \"value\": <JSON>} or {\"id\": ..., \"error\": {\"type\": \"ValueError\", \"message\": \"...\"}} (raised in the code).")
	if approvals {
		b.WriteString(" A call that needs approval is answered {\"id\": ..., \"approve\": true} once a person approved it (the call is then made) or {\"id\": ..., \"approve\": false} (it raises PermissionError in the code).")
	}
	return b.String()
}

// ResumeArgs are the arguments of a resume_python call.
type ResumeArgs struct {
	RunID     string         `json:"run_id"`
	SessionID string         `json:"session_id,omitempty"`
	Results   []ResumeResult `json:"results"`
	// IdempotencyKey, when set, makes the resume safe to retry, as
	// ToolArgs.IdempotencyKey does.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// ResumeResult answers one call: Value (JSON), or Error raised in the
// code; a call that waits for approval is answered with Approve instead.
type ResumeResult struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value,omitempty"`
	// Approve answers a call that waits for a person's approval: true
	// makes the call, false raises PermissionError in the code.
	Approve *bool `json:"approve,omitempty"`
	Error   *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Tools are the definitions of the executor's tools, execute_python
// (Tool) and resume_python (ResumeTool), as they are now: what an
// adapter offers a model.
func (e *Executor) Tools() []tools.Tool { return []tools.Tool{e.Tool(), e.ResumeTool()} }

// ResumeTool is the definition of the resume_python tool.
func (e *Executor) ResumeTool() tools.Tool {
	return tools.Tool{
		Name: ResumeToolName,
		Description: "Answer the calls an " + ToolName + " run is paused at (the functions you listed in client_tools), " +
			"so that the code goes on; the result is like " + ToolName + "'s (it may pause again with a new run_id).",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"run_id":{"type":"string","description":"the run_id the paused result gave"},` +
			`"session_id":{"type":"string","description":"the session_id given to ` + ToolName + `, if any"},` +
			`"results":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"value":{},"approve":{"type":"boolean","description":"for a call that needs a person's approval: true once they approved it, false if they refused"},` +
			`"error":{"type":"object","properties":{"type":{"type":"string"},"message":{"type":"string"}},"required":["type"]}},"required":["id"]}},` +
			idempotencyKeyParam + `},` +
			`"required":["run_id","results"]}`),
	}
}

// Resume runs a resume_python call: the results of a paused run's calls.
// It answers like Execute: the run's outcome in the Result (completed, or
// paused again), errors for calls that could not run (ErrBadArgs for
// results that do not fit the run, which the model can correct).
func (e *Executor) Resume(ctx context.Context, threadKey string, args json.RawMessage) (_ *Result, err error) {
	var a ResumeArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	if err := dec.Decode(&a); err != nil || a.RunID == "" {
		return nil, badArgs(ResumeToolName, "want {\"run_id\": \"…\", \"session_id\": \"…\", \"results\": [{\"id\": \"…\", \"value\": …}]} (session_id only for a named session)")
	}
	results := make([]session.ToolResult, len(a.Results))
	for i, r := range a.Results {
		res := session.ToolResult{ID: r.ID}
		switch {
		case r.Error != nil:
			if !tools.IsIdentifier(r.Error.Type) {
				return nil, badArgs(ResumeToolName, "result %q: error type %q is not a Python exception name", r.ID, r.Error.Type)
			}
			res.Error = &runtime.Exception{Type: r.Error.Type, Message: r.Error.Message}
		case len(r.Value) > 0:
			v, err := object.FromJSON(r.Value)
			if err != nil {
				return nil, badArgs(ResumeToolName, "result %q: %v", r.ID, err)
			}
			res.Value = v
		}
		results[i] = res
	}
	ctx, lease, done, err := e.take(ctx, ResumeToolName, threadKey, a.SessionID)
	if err != nil {
		return nil, err
	}
	defer func() { err = done(err) }()
	key, err := newCallKey(ResumeToolName, a.IdempotencyKey, args)
	if err != nil {
		return nil, err
	}
	res, err := e.execute(ctx, lease, a.SessionID, nil, key, func(ctx context.Context, s *session.Session, idem *session.Idempotency) (*session.Result, error) {
		opts := e.approvals(ctx, a)
		opts.Idempotency = idem
		return s.ResumeOptions(ctx, a.RunID, results, opts)
	}, nil)
	if err != nil {
		lease.Forget()
		var argsErr *ArgsError
		if errors.As(err, &argsErr) {
			return nil, argsErr
		}
		if refusal := runRefusal(err, a); refusal != nil {
			return nil, &ArgsError{Tool: ResumeToolName, Err: refusal}
		}
	}
	return res, err
}

// approvals is how a resume answers the calls that wait for approval
// (the Approvals policy): the decider is the one ctx names (WithDecider);
// the claim's lease is the run's timeout (which bounds the approved calls
// and the run together) and session.ClaimMargin, without a timeout
// session.DefaultClaimLease.
func (e *Executor) approvals(ctx context.Context, a ResumeArgs) session.ResumeOptions {
	p := Approvals{Functions: e.fns, Who: DeciderFrom(ctx), Logger: e.log, Refuse: func(_ session.ToolCall, err error) error {
		return &ArgsError{Tool: ResumeToolName, Err: err}
	}}
	if e.timeout > 0 {
		p.Lease = e.timeout + session.ClaimMargin
	}
	for _, r := range a.Results {
		p.Answers = append(p.Answers, Answer{ID: r.ID, Approve: r.Approve})
	}
	return p.ResumeOptions()
}

// runRefusal is the error of a resume the model can correct, told in the
// caller's terms (its run_id and session_id, not the store's ids), or nil
// when err is another failure.
func runRefusal(err error, a ResumeArgs) error {
	where := "the conversation's session"
	if a.SessionID != "" {
		where = fmt.Sprintf("session_id %q", a.SessionID)
	}
	switch {
	case errors.Is(err, session.ErrRunClaimed):
		return &callerError{err: err, msg: fmt.Sprintf("run_id %q of %s is being resumed elsewhere: another resume claimed it to make its approved calls, "+
			"and its outcome is stored when it is done; nothing was done for this call (do not resume it again: once it is done, the session's next call sees its outcome)", a.RunID, where)}
	case errors.Is(err, session.ErrRunNotPaused):
		return &callerError{err: err, msg: fmt.Sprintf("run_id %q is not paused in %s: it was resumed already, "+
			"abandoned after expiring, or never made there (a named session's run needs the same session_id as the call that paused)", a.RunID, where)}
	case errors.Is(err, session.ErrRunExpired), errors.Is(err, session.ErrBadResults):
		return err // these name only the run and its calls
	}
	return nil
}

// callerError is an error told in the caller's terms: msg replaces the
// text of err, which it still matches.
type callerError struct {
	err error
	msg string
}

func (e *callerError) Error() string { return e.msg }
func (e *callerError) Unwrap() error { return e.err }
