package mcpserver

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/session/agent"
)

// ApprovalPolicy says who decides the calls that wait for a person's
// approval (mcpclient.Server.Approve, or tools annotated destructiveHint).
type ApprovalPolicy string

const (
	// ApprovalsUserFirst (the default) asks the user when the client can
	// (it declared the elicitation capability): each approval is an
	// elicitation/create request the client shows to its user, and
	// resume_python cannot answer it. A client without elicitation gets
	// the durable pause of old, answered with resume_python.
	ApprovalsUserFirst ApprovalPolicy = "user-first"
	// ApprovalsUserOnly asks the user as ApprovalsUserFirst does, but a
	// client without elicitation never answers an approval: the call is
	// refused (PermissionError in the code) instead of pausing for the
	// client to approve it.
	ApprovalsUserOnly ApprovalPolicy = "user-only"
)

// ParseApprovalPolicy parses a policy's name ("" is ApprovalsUserFirst).
func ParseApprovalPolicy(s string) (ApprovalPolicy, error) {
	switch p := ApprovalPolicy(s); p {
	case "", ApprovalsUserFirst:
		return ApprovalsUserFirst, nil
	case ApprovalsUserOnly:
		return p, nil
	}
	return "", fmt.Errorf("unknown approval policy %q: want %s or %s", s, ApprovalsUserFirst, ApprovalsUserOnly)
}

// MetaKeyApproval is the _meta key of an approval's elicitation/create
// request: the call as data ({"tool", "server", "arguments", "run_id",
// "call_id", "session_id"}), for clients that render approvals
// themselves.
const MetaKeyApproval = "monty-go/approval"

// approvalField is the one property of an approval's form.
const approvalField = "approve"

// maxCallText is how much of a call, as Python spells it, an approval
// question shows; the rest is elided (the client's user sees the start).
const maxCallText = 2000

// maxMetaArgs is the largest arguments an approval's _meta carries as
// JSON, in bytes; larger ones are replaced by the clipped call.
const maxMetaArgs = 16 << 10

// maxDecisions bounds the approvals one tool call asks about (code that
// calls an approved tool in a loop pauses again after that many).
const maxDecisions = 100

// modernProtocol is the first protocol revision in which a server may not
// send requests while it serves one: it returns input requests instead
// (multi round-trip requests).
const modernProtocol = "2026-07-28"

// approver asks a client's user to decide approvals.
type approver struct {
	h       *handlers
	ss      *mcp.ServerSession
	modern  bool   // input requests, not elicitation/create requests
	elicits bool   // the client declared elicitation
	who     string // the decider the audit names
}

func (h *handlers) approverFor(ss *mcp.ServerSession) *approver {
	a := &approver{h: h, ss: ss, who: "mcp client (unnamed)"}
	if ss == nil {
		return a
	}
	if p := ss.InitializeParams(); p != nil {
		a.modern = p.ProtocolVersion >= modernProtocol
		if p.Capabilities != nil && p.Capabilities.Elicitation != nil {
			el := p.Capabilities.Elicitation
			// Neither mode named means form, as the protocol says.
			a.elicits = el.Form != nil || el.URL == nil
		}
		if p.ClientInfo != nil && p.ClientInfo.Name != "" {
			a.who = "mcp client " + p.ClientInfo.Name
		}
	}
	return a
}

// userDecides reports whether approvals are the user's alone on this
// connection, so that resume_python cannot answer them.
func (a *approver) userDecides() bool {
	return a.elicits || a.h.policy == ApprovalsUserOnly
}

// answerable are the calls of p that wait for approval and can be
// answered now: the call the code is stopped at, if it is one, else every
// approval among the awaited calls.
func answerable(p *agent.PausedRun) []agent.PausedCall {
	if p == nil {
		return nil
	}
	var out []agent.PausedCall
	for _, c := range p.Calls {
		switch {
		case c.Blocking && c.Approval:
			return []agent.PausedCall{c}
		case c.Blocking:
			return nil // the model answers the call the code is stopped at first
		case c.Approval:
			out = append(out, c)
		}
	}
	return out
}

// settle finishes a tool call whose result may be a run paused at calls
// that wait for approval: while the user can be asked, it asks (within
// the call's time limit, counted from start) and resumes the run with
// their decisions; under ApprovalsUserOnly without elicitation it refuses
// them. It returns the result to send: the run's outcome, a pause (the
// user did not answer in time, or the client answers), or, on the modern
// protocol, the input requests that ask the user.
func (a *approver) settle(ctx context.Context, tool string, res *agent.Result, err error, start time.Time) *mcp.CallToolResult {
	note := ""
	for asked := 0; err == nil && res.Paused != nil && asked < maxDecisions; {
		calls := answerable(res.Paused)
		if len(calls) == 0 {
			break
		}
		var decisions map[string]bool
		switch {
		case a.elicits && a.modern:
			return a.inputRequests(tool, res.Paused, calls)
		case a.elicits:
			var ok bool
			decisions, ok, note = a.ask(ctx, res.Paused, calls, start)
			if !ok {
				break
			}
		case a.h.policy == ApprovalsUserOnly:
			decisions = map[string]bool{}
			for _, c := range calls {
				decisions[c.ID] = false
			}
			a.h.log.Warn("approval refused: the client cannot ask its user (no elicitation) and approvals are the user's only",
				"tool", calls[0].Name, "run", res.Paused.RunID)
		}
		if decisions == nil {
			break
		}
		asked += len(decisions)
		res, err = a.decide(ctx, res.Paused, decisions)
	}
	out := a.h.answer(tool, res, err)
	if err == nil && res.Paused != nil && slices.ContainsFunc(res.Paused.Calls, func(c agent.PausedCall) bool { return c.Approval }) {
		a.explain(out, res, note)
	}
	return out
}

// explain adds to the text of a result paused at approvals who decides
// them, and how.
func (a *approver) explain(out *mcp.CallToolResult, res *agent.Result, note string) {
	var b strings.Builder
	if note != "" {
		b.WriteString("\n" + note)
	}
	if a.userDecides() {
		fmt.Fprintf(&b, "\nThe calls that need approval are decided by the user, not by you: call %s with run_id %q", agent.ResumeToolName, res.Paused.RunID)
		if res.Paused.SessionID != "" {
			fmt.Fprintf(&b, " and session_id %q", res.Paused.SessionID)
		}
		b.WriteString(` and results [{"id": ...}] naming such a call (no value, no approve) to ask the user again.`)
	}
	if a.h.consoleURL != "" {
		fmt.Fprintf(&b, "\nAn operator can also decide them in the console: %s", a.h.consoleURL)
		if a.h.consoleSession != nil {
			fmt.Fprintf(&b, " (session %q)", a.h.consoleSession(res.StoreID))
		}
	}
	if b.Len() == 0 {
		return
	}
	if t, ok := out.Content[0].(*mcp.TextContent); ok {
		t.Text += b.String()
	}
	if r, ok := out.StructuredContent.(*agent.Result); ok {
		r.Text += b.String()
	}
}

// ask asks the user about each call with elicitation/create, one at a
// time, until the time limit (from start). ok is false when not every
// call was decided: the run stays paused, and note says why.
func (a *approver) ask(ctx context.Context, p *agent.PausedRun, calls []agent.PausedCall, start time.Time) (decisions map[string]bool, ok bool, note string) {
	askCtx, cancel := ctx, context.CancelFunc(func() {})
	if limit := a.h.exec.TimeLimit(); limit > 0 {
		askCtx, cancel = context.WithDeadline(ctx, start.Add(limit))
	}
	defer cancel()
	decisions = map[string]bool{}
	for _, c := range calls {
		res, err := a.ss.Elicit(askCtx, a.question(p, c))
		switch {
		case err != nil && ctx.Err() == nil && askCtx.Err() != nil:
			a.h.log.Info("approval: the user did not answer within the time limit", "tool", c.Name, "run", p.RunID)
			return nil, false, fmt.Sprintf("The user did not answer the approval of %s within the time limit (%s); the run stays paused until %s.",
				c.Name, a.h.exec.TimeLimit(), p.Expires.Format(time.RFC3339))
		case err != nil:
			a.h.log.Warn("approval: asking the user failed", "tool", c.Name, "run", p.RunID, "error", err)
			return nil, false, fmt.Sprintf("Asking the user to approve %s failed (%v); the run stays paused until %s.",
				c.Name, err, p.Expires.Format(time.RFC3339))
		}
		decisions[c.ID] = approved(res)
	}
	return decisions, true, ""
}

// approved reports whether an elicitation's answer approves the call:
// accepted with approve true. Declined, cancelled, or accepted with
// anything else refuses it.
func approved(res *mcp.ElicitResult) bool {
	if res == nil || res.Action != "accept" {
		return false
	}
	v, _ := res.Content[approvalField].(bool)
	return v
}

// question is the elicitation/create request that asks about call c of
// run p: the call as the code makes it (clipped), its server, and a
// boolean form.
func (a *approver) question(p *agent.PausedRun, c agent.PausedCall) *mcp.ElicitParams {
	server, _, _ := strings.Cut(c.Name, ".")
	call := c.Call
	if len(call) > maxCallText {
		call = strings.ToValidUTF8(call[:maxCallText], "") + " … (clipped)"
	}
	var args any = map[string]any{"args": c.Args, "kwargs": c.Kwargs}
	if raw, _ := json.Marshal(args); len(raw) > maxMetaArgs {
		args = map[string]any{"clipped": call} // the code's arguments can be any size
	}
	return &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("The Python code asks to call %s on the MCP server %q, which needs your approval:\n\n%s\n\nApprove this call?",
			c.Name, server, call),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"` + approvalField + `":{"type":"boolean","title":"Approve this call",` +
			`"description":"true makes the call; false refuses it (the code gets PermissionError)","default":false}},"required":["` + approvalField + `"]}`),
		Meta: mcp.Meta{MetaKeyApproval: map[string]any{"tool": c.Name, "server": server, "arguments": args,
			"run_id": p.RunID, "call_id": c.ID, "session_id": p.SessionID}},
	}
}

// decide resumes run p with the user's decisions.
func (a *approver) decide(ctx context.Context, p *agent.PausedRun, decisions map[string]bool) (*agent.Result, error) {
	args := agent.ResumeArgs{RunID: p.RunID, SessionID: p.SessionID}
	for _, c := range p.Calls {
		if d, ok := decisions[c.ID]; ok {
			args.Results = append(args.Results, agent.ResumeResult{ID: c.ID, Approve: &d})
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	ctx = agent.WithDecider(ctx, a.who+" (the user, asked by elicitation)")
	if !a.elicits {
		ctx = agent.WithDecider(ctx, "monty mcp --approvals="+string(ApprovalsUserOnly)+" (the client cannot ask its user)")
		ctx = agent.WithDenialReason(ctx, "only a person may approve it, and this MCP client cannot ask its user (it has no elicitation)")
	}
	return a.h.exec.Resume(ctx, a.h.thread, raw)
}

// --- the modern protocol: input requests ------------------------------------

// approvalState is what an input-required result asks the client to send
// back (signed, so that neither the client nor the model can point it at
// another run).
type approvalState struct {
	Tool      string    `json:"tool"`
	SessionID string    `json:"session_id,omitempty"`
	RunID     string    `json:"run_id"`
	Calls     []string  `json:"calls"`
	Expires   time.Time `json:"expires"`
}

// inputRequestID is the input request that asks about call id.
func inputRequestID(id string) string { return "approval-" + id }

// inputRequests is the input-required result that asks the user about
// calls of run p: the run is stored paused meanwhile, and the client
// calls the tool again with the answers.
func (a *approver) inputRequests(tool string, p *agent.PausedRun, calls []agent.PausedCall) *mcp.CallToolResult {
	st := approvalState{Tool: tool, SessionID: p.SessionID, RunID: p.RunID, Expires: p.Expires}
	reqs := mcp.InputRequestMap{}
	for _, c := range calls {
		st.Calls = append(st.Calls, c.ID)
		reqs[inputRequestID(c.ID)] = a.question(p, c)
	}
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: a.h.sign(st)}
}

// errBadState: a call's requestState is not one this server gave out.
var errBadState = errors.New("mcpserver: requestState is not one this server gave out, or it expired")

// answered continues a tool call the client sent again with the user's
// answers to its input requests.
func (a *approver) answered(ctx context.Context, req *mcp.CallToolRequest, start time.Time) *mcp.CallToolResult {
	st, err := a.h.verify(req.Params.RequestState)
	if err != nil || st.Tool != req.Params.Name {
		a.h.log.Warn("approval: refused a retry", "tool", req.Params.Name, "error", cmp.Or(err, errBadState))
		return toolError("the answers to the approval requests could not be used: " + errBadState.Error() +
			". Nothing was approved; the run stays paused: call " + agent.ResumeToolName + " with its run_id and results [{\"id\": ...}] to ask the user again")
	}
	p := &agent.PausedRun{RunID: st.RunID, SessionID: st.SessionID}
	decisions := map[string]bool{}
	for _, id := range st.Calls {
		p.Calls = append(p.Calls, agent.PausedCall{ID: id})
		res, _ := req.Params.InputResponses[inputRequestID(id)].(*mcp.ElicitResult)
		decisions[id] = approved(res)
	}
	res, err := a.decide(ctx, p, decisions)
	return a.settle(ctx, st.Tool, res, err, start)
}

// newStateKey is a random key that signs this server's request states.
func newStateKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// sign encodes st with its HMAC.
func (h *handlers) sign(st approvalState) string {
	body, _ := json.Marshal(st)
	mac := hmac.New(sha256.New, h.stateKey)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verify decodes a request state sign made, unless it was altered or the
// run it names has expired.
func (h *handlers) verify(s string) (approvalState, error) {
	var st approvalState
	body64, mac64, ok := strings.Cut(s, ".")
	body, err1 := base64.RawURLEncoding.DecodeString(body64)
	sum, err2 := base64.RawURLEncoding.DecodeString(mac64)
	if !ok || err1 != nil || err2 != nil {
		return st, errBadState
	}
	mac := hmac.New(sha256.New, h.stateKey)
	mac.Write(body)
	if !hmac.Equal(sum, mac.Sum(nil)) || json.Unmarshal(body, &st) != nil || !time.Now().Before(st.Expires) {
		return approvalState{}, errBadState
	}
	return st, nil
}

// --- resume_python on a connection where the user decides -------------------

// resume runs a resume_python call on a connection where approvals are
// the user's: an answer with approve is refused (the model cannot stand
// in for the user), a result naming an approval call with nothing else
// asks the user again, and the other results go to the run as they are.
func (a *approver) resume(ctx context.Context, req *mcp.CallToolRequest, start time.Time) *mcp.CallToolResult {
	var args agent.ResumeArgs
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.RunID == "" {
		res, err := a.h.exec.Resume(ctx, a.h.thread, req.Params.Arguments) // says what is wrong
		return a.h.answer(agent.ResumeToolName, res, err)
	}
	p, err := a.h.exec.Paused(ctx, a.h.thread, args.SessionID)
	if err != nil {
		return a.h.answer(agent.ResumeToolName, nil, err)
	}
	approval := map[string]bool{}
	if p != nil && p.RunID == args.RunID {
		for _, c := range p.Calls {
			approval[c.ID] = c.Approval
		}
	}
	var rest []agent.ResumeResult
	askAgain := false
	for _, r := range args.Results {
		switch {
		case r.Approve != nil || approval[r.ID] && (len(r.Value) > 0 || r.Error != nil):
			a.h.log.Warn("resume_python: refused an answer to an approval", "run", args.RunID, "call", r.ID, "client", a.who)
			return toolError(fmt.Sprintf("call %q needs the user's approval, which this server asks of the user itself; "+
				"resume_python cannot answer it. Give {\"id\": %q} alone to ask the user again, and answer only the calls of your client tools.", r.ID, r.ID))
		case approval[r.ID]:
			askAgain = true
		default:
			rest = append(rest, r)
		}
	}
	if len(rest) == 0 && askAgain {
		res := &agent.Result{SessionID: args.SessionID, RunID: p.RunID, Paused: p, Text: "The code is paused at calls that need the user's approval."}
		return a.settle(ctx, agent.ResumeToolName, res, nil, start)
	}
	args.Results = rest
	raw, err := json.Marshal(args)
	if err != nil {
		return a.h.answer(agent.ResumeToolName, nil, err)
	}
	res, err := a.h.exec.Resume(agent.WithDecider(ctx, a.who), a.h.thread, raw)
	return a.settle(ctx, agent.ResumeToolName, res, err, start)
}
