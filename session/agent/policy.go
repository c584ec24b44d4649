package agent

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/tools"
)

// Approvals is the one policy by which the calls that wait for a person's
// approval are answered, whatever surface resumes (an Executor's
// resume_python, the HTTP API's POST /runs/{run_id}/resume) and whoever
// makes them (the resume, or a monty.v1 connection whose feed waited on
// the decision: Carry): every answer is checked (CheckAnswer) before
// anything is done, the run is claimed when a call is approved, then the
// approved calls are made (Approve), so that no call is made for a resume
// that is refused, and of racing resumes only one makes them. It is a
// plain value.
type Approvals struct {
	// Functions has the MCP servers that make the calls.
	Functions *tools.Registry
	// Who decided (never a secret).
	Who string
	// Answers are the resume's, in the order of its results: each call's
	// id and, for a call that waits for approval, the decision.
	Answers []Answer
	// Lease bounds the claim (session.DefaultClaimLease when 0): what the
	// resume may take at most.
	Lease time.Duration
	// CallTimeout bounds each approved call (0: the resume's context
	// only); TimedOut is then the error of a call that ran past it (it may
	// have had its effect).
	CallTimeout time.Duration
	TimedOut    func(c session.ToolCall, name string) error
	// Refuse is the resume's error for an answer CheckAnswer refuses (nil:
	// that error as it is).
	Refuse func(c session.ToolCall, err error) error
	// Logger gets a record of each decision carried out (slog.Default
	// when nil).
	Logger *slog.Logger
}

// Answer is a resume's answer to one call: Approve is set for a decision
// on a call that waits for approval, nil for a value or an error.
type Answer struct {
	ID      string
	Approve *bool
}

// Check checks the answers against the calls of p (CheckAnswer); an
// answer to a call p does not have is left to the resume to refuse.
func (a Approvals) Check(p *session.Paused) error {
	calls := callsByID(p)
	for _, r := range a.Answers {
		c, ok := calls[r.ID]
		if !ok {
			continue
		}
		if err := CheckAnswer(a.Functions, c, r.Approve != nil); err != nil {
			if a.Refuse != nil {
				return a.Refuse(c, err)
			}
			return err
		}
	}
	return nil
}

// ResumeOptions are the session's options for a resume under this
// policy.
func (a Approvals) ResumeOptions() session.ResumeOptions {
	o := session.ResumeOptions{Who: a.Who, Lease: a.Lease, Check: a.Check, Name: func(c session.ToolCall) string {
		name, _ := ApprovalName(a.Functions, c)
		return name
	}}
	if o.Lease <= 0 {
		o.Lease = session.DefaultClaimLease
	}
	decided := false
	for _, r := range a.Answers {
		if r.Approve != nil {
			decided = true
			if *r.Approve {
				o.Claim = append(o.Claim, r.ID)
			}
		}
	}
	if decided {
		o.Make = a.make
	}
	return o
}

// make makes the decided calls of p, in place of their results.
func (a Approvals) make(ctx context.Context, p *session.Paused, results []session.ToolResult) ([]session.ToolResult, error) {
	calls := callsByID(p)
	results = slices.Clone(results)
	for i, r := range a.Answers {
		if r.Approve == nil {
			continue
		}
		res, err := a.Carry(ctx, calls[r.ID], *r.Approve)
		if err != nil {
			return nil, err
		}
		results[i] = res
	}
	return results, nil
}

// Carry carries out the decision on call c, decided by Who (the one ctx
// names when Who is empty): approved, the call is made (Approve; within
// CallTimeout, TimedOut's error past it), else it raises PermissionError.
// The result has the decision, for the session's record of decisions.
// A resume carries its decisions itself (ResumeOptions); a driver whose
// feed waited on a decision (session.Driven.AwaitApproval) calls Carry
// with the verdict.
func (a Approvals) Carry(ctx context.Context, c session.ToolCall, approve bool) (session.ToolResult, error) {
	if a.Who != "" {
		ctx = WithDecider(ctx, a.Who)
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if a.CallTimeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, a.CallTimeout)
	}
	defer cancel()
	res, err := Approve(callCtx, a.Functions, c, approve, a.Logger)
	if err != nil && callCtx.Err() != nil && ctx.Err() == nil && a.TimedOut != nil {
		name, _ := ApprovalName(a.Functions, c)
		return session.ToolResult{}, a.TimedOut(c, name)
	}
	return res, err
}

// callsByID are the calls of p by id.
func callsByID(p *session.Paused) map[string]session.ToolCall {
	calls := make(map[string]session.ToolCall, len(p.Calls))
	for _, c := range p.Calls {
		calls[c.ID] = c
	}
	return calls
}
