package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// Approvals over monty.v1: a call of a profile's MCP tool that waits for a
// person's approval pauses the session durably, as on the other surfaces
// (session.Driven.AwaitApproval): the console lists it and the HTTP API's
// POST /runs/{run_id}/resume decides it. The client's feed waits, within
// its turn time limit; the server then makes the approved call, or the
// call raises PermissionError, and the feed goes on.

// restored applies the profile of a session the worker loaded, before the
// load goes on (a feed suspended at an approval asks again).
func (c *conn) restored(cfg *pb.Configure) {
	if _, ok := c.s.opts.Profiles[cfg.GetProfile()]; ok || cfg.GetProfile() == "" {
		_ = c.useProfile(cfg) // load checks the profile again, and reports
	}
}

// approvalWait is how long a feed waits for a decision: its turn time
// limit (else its feed time limit), within the server's turn timeout.
func (c *conn) approvalWait() time.Duration {
	limit := c.s.opts.TurnTimeout - c.s.opts.TurnTimeout/10
	l := c.w.Config().GetLimits()
	for _, us := range []*uint64{l.MaxTurnDurationMicros, l.MaxFeedDurationMicros} {
		if us != nil {
			return min(time.Duration(min(*us, uint64(limit.Microseconds())))*time.Microsecond, limit)
		}
	}
	return limit
}

// permission is the PermissionError a call that was not made raises.
func permission(format string, args ...any) error {
	return &runtime.Exception{Type: "PermissionError", Message: fmt.Sprintf(format, args...)}
}

// approve answers call, of a method that waits for a person's approval:
// it stores the pause, waits for the decision, and makes the approved
// call (protocol.WorkerOptions.Approve).
func (c *conn) approve(ctx context.Context, call *runtime.FunctionCall, async bool) (object.Value, error) {
	s := c.s
	name := call.Name
	if c.tools != nil {
		if n, _, ok := c.tools.Approval(*call.ObjectID, call.Name); ok {
			name = n
		}
	}
	if c.tools == nil {
		return nil, permission("%s waits for a person's approval, and this server cannot make it (its MCP server is not among this profile's); it was not called", name)
	}
	if c.sid == "" || s.store == nil {
		return nil, permission("%s waits for a person's approval, which only a stored session can wait for (this one is ephemeral, or the server keeps no sessions); it was not called", name)
	}
	live, err := c.w.Live(ctx)
	if err != nil {
		return nil, permission("%s waits for a person's approval, which could not be asked for (%v); it was not called", name, err)
	}
	held := c.lease.Driven()
	if held == nil {
		at := s.sessionPlace(c.ns, c.sid)
		if held, err = session.NewDriven(ctx, at.storeID, at.opts); err != nil {
			return nil, err
		}
	}
	c.keep(held)
	wait := c.approvalWait()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	log := s.log.With("session_id", c.sid, "tool", name)
	log.InfoContext(ctx, "monty.v1 call waits for a person's approval", "wait", wait)
	r := session.DrivenREPL{Interpreter: live.Interpreter, REPL: live.REPL, Feed: live.Feed, Limits: live.Limits}
	v, err := held.AwaitApproval(wctx, r, session.Driver{Name: driverName, State: live.Header}, call, async)
	switch {
	case errors.Is(err, session.ErrApprovalPending):
		log.InfoContext(ctx, "monty.v1 approval not decided in time; the call raises PermissionError", "wait", wait)
		return nil, permission("%s waits for a person's approval (session %s, call %d): nobody decided it within this feed's turn time limit of %s, so it was not called; "+
			"ask again with a longer max_turn_duration, and decide it in the console or with POST /runs/{run_id}/resume while the feed waits", name, c.sid, call.CallID, wait)
	case err != nil:
		log.WarnContext(ctx, "monty.v1 approval could not be waited for", "error", err)
		return nil, permission("%s waits for a person's approval, which could not be waited for (the session was changed elsewhere, or the store failed); it was not called", name)
	}
	res, err := agent.Approvals{Functions: c.tools, Who: v.Who, Logger: s.log}.Carry(ctx, v.Call, v.Approved)
	if res.Decision != nil {
		held.Record(*res.Decision)
	}
	switch {
	case err != nil:
		return nil, err
	case res.Error != nil:
		return nil, res.Error
	}
	return res.Value, nil
}
