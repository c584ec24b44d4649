package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/tools"
)

// Errors of CheckAnswer and Approve, for answers to the
// calls of a paused run.
var (
	// ErrApprovalNeeded: the call waits for a person's approval and was
	// answered with a value or an error.
	ErrApprovalNeeded = errors.New("agent: the call waits for a person's approval")
	// ErrNotApproval: the call does not wait for approval and was
	// answered with approve.
	ErrNotApproval = errors.New("agent: the call does not wait for approval")
	// ErrApprovalUnavailable: the call waits for approval, but its MCP
	// server is not connected to this registry, so it cannot be made here.
	ErrApprovalUnavailable = errors.New("agent: the call's MCP server is not connected here")
)

// ApprovalName names a call of a paused run as the code made it and
// reports whether it waits for a person's approval. Such a call is a
// method call (the host objects' methods the run's caller answers are
// approvals; a client tool's call is a function's), named
// "github.delete_repo" when reg has its MCP server, else by the method
// alone. reg may be nil (no MCP servers).
func ApprovalName(reg *tools.Registry, c session.ToolCall) (string, bool) {
	if c.Object == nil {
		return c.Name, false
	}
	if name, _, ok := reg.Approval(*c.Object, c.Name); ok {
		return name, true
	}
	return c.Name, true
}

// CheckAnswer reports whether call c of a paused run may be answered as
// given: byApprove for {"approve": …}, else a value or an error. A call
// that waits for approval takes approve alone, so that no value a caller
// writes stands for a tool's result, and only where reg has its MCP
// server; any other call takes a value or an error. The errors match
// ErrApprovalNeeded, ErrNotApproval or ErrApprovalUnavailable and say
// what to send instead. reg may be nil (no MCP servers).
func CheckAnswer(reg *tools.Registry, c session.ToolCall, byApprove bool) error {
	name, approval := ApprovalName(reg, c)
	here := false
	if c.Object != nil {
		_, _, here = reg.Approval(*c.Object, c.Name)
	}
	switch {
	case !approval && byApprove:
		return &callerError{err: ErrNotApproval, msg: fmt.Sprintf(
			"call %q (%s) does not wait for approval: answer it with a value or an error, not approve", c.ID, name)}
	case approval && !byApprove:
		return &callerError{err: ErrApprovalNeeded, msg: fmt.Sprintf(
			"call %q (%s) waits for a person's approval: answer it with {\"id\": %q, \"approve\": true} once they approved it, or false; a call that needs a person's approval takes no value or error", c.ID, name, c.ID)}
	case approval && !here:
		return &callerError{err: ErrApprovalUnavailable, msg: fmt.Sprintf(
			"call %q (%s) waits for a person's approval, but its MCP server is not connected here, so nothing was done: resume the run where the same MCP servers are connected under the same names", c.ID, name)}
	}
	return nil
}

// Approve answers a call that waits for a person's approval: approved,
// the call is made now, in this process (its MCP server must be connected
// to reg under the same name), with the call's idempotency key
// (tools.WithIdempotencyKey: an MCP server gets it in the request's
// _meta), and its outcome is the result (an exception the tool raised as
// the result's Error); refused, the call raises PermissionError in the
// code. Give the result to Session.Resume with the other results: its
// Decision records who decided (DeciderFrom(ctx)), what, and what came of
// it, which the session stores with its state. The decision is also
// reported: as a span (telemetry.SpanApproval), as an ApprovalDecision
// event of the run ctx reports to, and as a record in log ("approval
// decision"; slog.Default when nil).
// A resume that makes approved calls claims the run first
// (session.ResumeOptions.Claim); Executor.Resume and the HTTP API do.
// Errors: CheckAnswer's, and the caller's context ending (the call may
// then have run).
func Approve(ctx context.Context, reg *tools.Registry, c session.ToolCall, approve bool, log *slog.Logger) (session.ToolResult, error) {
	if err := CheckAnswer(reg, c, true); err != nil {
		return session.ToolResult{}, err
	}
	name, call, _ := reg.Approval(*c.Object, c.Name)
	d := newDecision(ctx, name, c, approve)
	ctx, span := startDecision(ctx, d)
	if !approve {
		d.Outcome = session.DecisionDenied
		report(ctx, log, span, &d, nil)
		return session.ToolResult{ID: c.ID, Decision: &d, Error: &runtime.Exception{Type: "PermissionError",
			Message: fmt.Sprintf("%s was not approved: %s", name, denialReason(ctx))}}, nil
	}
	// The method's host function binds the arguments and reports the call
	// to the run's events, as a call the code made itself.
	v, err := call(tools.WithIdempotencyKey(ctx, c.IdempotencyKey), c.Args, c.Kwargs)
	res := session.ToolResult{ID: c.ID, Decision: &d}
	var exc *runtime.Exception
	switch {
	case err == nil:
		if v == nil {
			v = object.None{}
		}
		res.Value = v
	case errors.As(err, &exc):
		res.Error = exc
	case ctx.Err() != nil:
		d.Outcome = session.DecisionMayHaveRun
		report(ctx, log, span, &d, err)
		return session.ToolResult{}, err
	default:
		res.Error = &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("%s: %v", name, err)}
	}
	d.Outcome = session.DecisionOK
	if res.Error != nil {
		d.Outcome, d.Exception = session.DecisionRaised, res.Error.Type
	}
	report(ctx, log, span, &d, nil)
	return res, nil
}
