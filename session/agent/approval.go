package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
)

// ErrNotApproval matches Registry.Approve errors for a call that does not
// wait for a person's approval, or whose host object this registry does
// not have (an MCP server not connected in this process).
var ErrNotApproval = errors.New("agent: not a call that waits for approval here")

// approvalMethod returns the class and method of a paused call that waits
// for approval (see MCPServer.Approve).
func (r *Registry) approvalMethod(c session.ToolCall) (*Class, *Function, bool) {
	if c.Object == nil {
		return nil, nil, false
	}
	o, ok := r.lookupObject(*c.Object)
	if !ok {
		return nil, nil, false
	}
	m := o.class.method(c.Name)
	if m == nil || !m.approval {
		return nil, nil, false
	}
	return o.class, m, true
}

// ApprovalName reports whether a call of a paused run waits for a
// person's approval, and names it as the code does ("github.delete_repo").
func (r *Registry) ApprovalName(c session.ToolCall) (string, bool) {
	class, _, ok := r.approvalMethod(c)
	if !ok {
		return "", false
	}
	return class.Name + "." + c.Name, true
}

// Approve answers a call that waits for a person's approval: approved,
// the call is made now, in this process (its MCP server must be connected
// here under the same name), and its outcome is the result (an exception
// the tool raised as the result's Error); refused, the call raises
// PermissionError in the code. Give the result to Session.Resume with the
// other results. Errors: ErrNotApproval for another call, and the
// caller's context ending.
func (r *Registry) Approve(ctx context.Context, c session.ToolCall, approve bool) (session.ToolResult, error) {
	class, _, ok := r.approvalMethod(c)
	if !ok {
		return session.ToolResult{}, fmt.Errorf("%w: call %s (%s)", ErrNotApproval, c.ID, c.Name)
	}
	name := class.Name + "." + c.Name
	if !approve {
		return session.ToolResult{ID: c.ID, Error: &runtime.Exception{Type: "PermissionError",
			Message: fmt.Sprintf("%s was not approved: a person refused the call", name)}}, nil
	}
	// The method's host function binds the arguments and reports the call
	// to the run's events, as a call the code made itself.
	v, err := class.calls[c.Name](ctx, c.Args, c.Kwargs)
	var exc *runtime.Exception
	switch {
	case err == nil:
		return session.ToolResult{ID: c.ID, Value: orNone(v)}, nil
	case errors.As(err, &exc):
		return session.ToolResult{ID: c.ID, Error: exc}, nil
	case ctx.Err() != nil:
		return session.ToolResult{}, err
	}
	return session.ToolResult{ID: c.ID, Error: &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("%s: %v", name, err)}}, nil
}
