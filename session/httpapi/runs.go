package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agui"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/tools"
)

// ToolSpec declares a client tool in POST /exec: a function the code may
// call that the client answers (POST /runs/{run_id}/resume). The shape is
// a model's tool definition; Description and Parameters are not used by
// the server (the client keeps them for its model).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Async makes a call return an awaitable at once, so that
	// asyncio.gather collects several calls before the run pauses; the
	// code must await it. By default a call pauses the run where it is
	// made and its result is the call's value.
	Async bool `json:"async,omitempty"`
}

// ToolCallInfo is a call of a client tool in a paused answer, or of a
// tool that waits for a person's approval.
type ToolCallInfo struct {
	ID string `json:"id"`
	// Name is the client tool's name, or for an approval the method as
	// the code calls it ("github.delete_repo").
	Name string `json:"name"`
	// Blocking marks the sync call the code is stopped at: the resume
	// must answer it, alone (async calls listed with it are answered when
	// the code awaits them, at a later pause).
	Blocking bool `json:"blocking,omitempty"`
	// Approval marks a call of an MCP tool that waits for a person's
	// approval (mcpclient.Server.Approve, or a tool annotated
	// destructiveHint): the server makes the call itself once the resume
	// approves it ({"id": ..., "approve": true}); a value cannot answer it.
	Approval bool `json:"approval,omitempty"`
	// MayHaveRun marks an approved call whose resume claimed the run and
	// then stopped (its process died, the call hit the time limit, the
	// state could not be stored) before the outcome was stored: the call
	// may have run. The run was listed again under a new run_id for a new
	// decision: approving it makes the call again, with the same
	// idempotency key.
	MayHaveRun bool `json:"may_have_run,omitempty"`
	// Args and Kwargs are the arguments as JSON (a value without a JSON
	// form appears as its repr, a string).
	Args   []json.RawMessage          `json:"args"`
	Kwargs map[string]json.RawMessage `json:"kwargs"`
}

// ResumeRequest is the body of POST /runs/{run_id}/resume.
type ResumeRequest struct {
	Results []ToolResultSpec `json:"results"`
	// Limits, as for POST /exec, for the rest of the run.
	Limits *RequestLimits `json:"limits,omitempty"`
}

// ToolResultSpec answers one call: its value, or an error the call raises
// in the code; a call that waits for approval (ToolCallInfo.Approval) is
// answered by Approve instead, and only such a call.
type ToolResultSpec struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value,omitempty"`
	Error *ToolError      `json:"error,omitempty"`
	// Approve answers a call that waits for a person's approval: true
	// once they approved it (the server makes the call, and its outcome
	// is the result), false if they refused (the call raises
	// PermissionError in the code).
	Approve *bool `json:"approve,omitempty"`
}

// ToolError is an exception a client tool raises in the code.
type ToolError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Answer statuses.
const (
	StatusCompleted = "completed"
	StatusPaused    = "paused"
	// StatusDecided answers (202) a resume of a run a monty.v1 feed waits
	// on for a person's approval: the decisions were stored for that
	// feed, which makes the approved calls and goes on; its client gets
	// the outcome.
	StatusDecided = "decided"
)

const maxTools = 64

// parseTools checks the client tools of a request.
func parseTools(specs []ToolSpec) ([]session.ClientTool, *apiError) {
	if len(specs) > maxTools {
		return nil, badRequest(fmt.Sprintf("%d tools, at most %d are accepted", len(specs), maxTools))
	}
	seen := map[string]bool{}
	out := make([]session.ClientTool, 0, len(specs))
	for _, t := range specs {
		switch {
		case !identPattern().MatchString(t.Name):
			return nil, badRequest(fmt.Sprintf("tool name %q is not a Python identifier", t.Name))
		case seen[t.Name]:
			return nil, badRequest(fmt.Sprintf("tool %q is declared twice", t.Name))
		}
		seen[t.Name] = true
		out = append(out, session.ClientTool{Name: t.Name, Async: t.Async})
	}
	return out, nil
}

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: msg}
}

// runID names a paused run over HTTP: the session id and the session's run
// id, so that any instance can find it (the API key's namespace is part of
// the lookup, so another key's runs are not found).
func runID(sessionID, run string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(sessionID)) + "." + run
}

// parseRunID splits a run id; ok is false when it is not one.
func parseRunID(id string) (sessionID, run string, ok bool) {
	enc, run, found := strings.Cut(id, ".")
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if !found || err != nil || run == "" || checkSessionID(string(b)) != nil {
		return "", "", false
	}
	return string(b), run, true
}

// setPaused fills a paused answer; reg (nil: none) names the calls that
// wait for approval.
func setPaused(resp *ExecResponse, sessionID string, p *session.Paused, reg *tools.Registry) {
	resp.Status, resp.RunID = StatusPaused, runID(sessionID, p.RunID)
	if p.Previous != "" {
		resp.PreviousRunID = runID(sessionID, p.Previous)
	}
	resp.Result, resp.ResultRepr = json.RawMessage("null"), ""
	resp.Calls = make([]ToolCallInfo, len(p.Calls))
	resp.RunExpires = p.Expires.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	for i, c := range p.Calls {
		resp.Calls[i] = callInfo(c, reg)
	}
}

// callInfo describes a call of a paused run.
func callInfo(c session.ToolCall, reg *tools.Registry) ToolCallInfo {
	info := ToolCallInfo{ID: c.ID, Blocking: c.Blocking, MayHaveRun: c.MayHaveRun, Args: make([]json.RawMessage, len(c.Args)), Kwargs: map[string]json.RawMessage{}}
	info.Name, info.Approval = agent.ApprovalName(reg, c)
	for j, a := range c.Args {
		info.Args[j] = tools.ValueJSON(a)
	}
	for _, kw := range c.Kwargs {
		k, _ := kw.Key.(object.Str)
		info.Kwargs[string(k)] = tools.ValueJSON(kw.Value)
	}
	return info
}

// toolResults converts a resume request's results.
func toolResults(specs []ToolResultSpec) ([]session.ToolResult, *apiError) {
	if len(specs) == 0 {
		return nil, badRequest("results is empty: answer at least one call of the run")
	}
	out := make([]session.ToolResult, len(specs))
	for i, r := range specs {
		res := session.ToolResult{ID: r.ID}
		switch {
		case r.Approve != nil && (r.Error != nil || len(r.Value) > 0):
			return nil, badRequest(fmt.Sprintf("result %q has approve and a value or an error: a call that waits for approval is answered by approve alone", r.ID))
		case r.Approve != nil:
			// The call is made (or refused) once the run is loaded: see
			// Handler.approvals.
		case r.Error != nil && len(r.Value) > 0:
			return nil, badRequest(fmt.Sprintf("result %q has both a value and an error", r.ID))
		case r.Error != nil:
			if !identPattern().MatchString(r.Error.Type) {
				return nil, badRequest(fmt.Sprintf("result %q: error type %q is not a Python exception name", r.ID, r.Error.Type))
			}
			res.Error = &runtime.Exception{Type: r.Error.Type, Message: r.Error.Message}
		default:
			raw := r.Value
			if len(raw) == 0 {
				raw = json.RawMessage("null")
			}
			v, err := object.FromJSON(raw)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("result %q: %v", r.ID, err))
			}
			res.Value = v
		}
		out[i] = res
	}
	return out, nil
}

// runError is the answer for a run the session refused, nil for other
// errors. Its message names the session and the run by the API's ids
// (sessionID, and runID: the run_id a resume was given, empty for an
// execution), never by the store's: the session's own wording holds the
// store id, with the namespace derived from the API key.
func runError(err error, sessionID, runID string) *apiError {
	switch {
	case errors.Is(err, session.ErrRunClaimed):
		return runClaimed(sessionID, runID)
	case errors.Is(err, session.ErrRunNotPaused):
		return runNotPaused(sessionID, runID)
	case errors.Is(err, session.ErrRunExpired):
		return runExpired(sessionID, runID)
	case errors.Is(err, session.ErrBadResults):
		// What is wrong names the calls by the ids the client sent.
		return invalidResults(runID, strings.TrimPrefix(err.Error(), session.ErrBadResults.Error()+": "))
	case errors.Is(err, session.ErrRunPaused):
		return runPaused(sessionID, "")
	case errors.Is(err, errResumeRaced):
		return &apiError{status: http.StatusConflict, code: "run_already_resumed", detail: err.Error(), msg: fmt.Sprintf(
			"another request resumed run %q at the same time, and its outcome was stored; this one's was not", runID)}
	case errors.Is(err, session.ErrRunUnloadable):
		return &apiError{status: http.StatusConflict, code: "run_unloadable", detail: err.Error(), msg: fmt.Sprintf(
			"session %q holds a run paused by another version of the interpreter, which this server cannot continue; resume it on a server of the version that paused it", sessionID)}
	case errors.Is(err, session.ErrBusy):
		return &apiError{status: http.StatusConflict, code: "session_busy", detail: err.Error(), msg: fmt.Sprintf(
			"session %q is busy: %s; nothing ran, retry when it is free", sessionID, busyHolder(err))}
	case errors.Is(err, session.ErrDriverFeed):
		return &apiError{status: http.StatusConflict, code: "session_in_feed", detail: err.Error(), msg: fmt.Sprintf(
			"session %q is paused in a monty.v1 feed, waiting on the client that ran it; that client continues it (load_session), and it runs here once the feed is over", sessionID)}
	case errors.Is(err, session.ErrStateTooLarge):
		return &apiError{status: statusTooLarge, code: codeStateTooLarge, detail: err.Error(), msg: fmt.Sprintf(
			"the run paused at client tool calls, but the state of session %q with the paused run is larger than this server's limit on stored state, so nothing was stored", sessionID)}
	case errors.Is(err, runtime.ErrInvalidOption):
		return badRequest(err.Error())
	}
	return nil
}

// busyHolder says who holds a busy session (a *session.BusyError), in
// the client's terms.
func busyHolder(err error) string {
	var be *session.BusyError
	switch {
	case !errors.As(err, &be):
		return "another call holds it"
	case be.QueueFull:
		return "held by " + be.Holder + ", and as many requests as may wait for it do"
	case be.Waited > 0:
		return fmt.Sprintf("held by %s, still after waiting %s", be.Holder, be.Waited)
	}
	return "held by " + be.Holder
}

// invalidResults is the answer to a resume of run runID whose results do
// not answer its calls, for the reason why.
func invalidResults(runID, why string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_results", msg: fmt.Sprintf(
		"the results do not answer the calls of run %q: %s; answer the calls the run's answer lists (calls[].id), and a blocking call alone", runID, why)}
}

// runNotPaused is the answer to a resume of run runID of session
// sessionID, which is not paused there (any more).
func runNotPaused(sessionID, runID string) *apiError {
	return &apiError{status: http.StatusConflict, code: "run_not_paused", msg: fmt.Sprintf(
		"session %q has no paused run %q: it was resumed already (a run is resumed once: its next pause has a new run_id), abandoned after it expired, or never made", sessionID, runID)}
}

// runExpired is the answer to a resume of run runID of session sessionID
// after it expired.
func runExpired(sessionID, runID string) *apiError {
	return &apiError{status: http.StatusGone, code: "run_expired", msg: fmt.Sprintf(
		"run %q of session %q waited longer than its time to live and has expired; the session's next /exec abandons it", runID, sessionID)}
}

// runPaused is the answer to an execution in session sessionID while its
// run runID (empty: not known) waits for its resume.
func runPaused(sessionID, runID string) *apiError {
	resume := "POST /runs/{run_id}/resume (the answer that paused it has its run_id)"
	if runID != "" {
		resume = fmt.Sprintf("POST /runs/%s/resume (run_id %q)", runID, runID)
	}
	return &apiError{status: http.StatusConflict, code: "run_paused", msg: fmt.Sprintf(
		"session %q has a run paused at client tool calls, and runs nothing else until it is resumed with %s or expires", sessionID, resume)}
}

// errResumeRaced marks a resume that lost the session's compare-and-set.
var errResumeRaced = errors.New("httpapi: resume raced another")

// reportCalls reports the calls a paused run waits on to sink as the
// tool calls of run runID (start, arguments as one JSON object {"args":
// [...], "kwargs": {...}}, end), under the ids a resume answers them by:
// the ids the stream's interrupts name. reg names the approvals.
func reportCalls(sink func(agent.Event), runID string, calls []session.ToolCall, reg *tools.Registry) {
	for _, c := range calls {
		info := callInfo(c, reg)
		args, _ := json.Marshal(map[string]any{"args": info.Args, "kwargs": info.Kwargs})
		now := time.Now()
		for _, e := range []agent.Event{{Type: agent.ToolCallStart, ToolName: info.Name}, {Type: agent.ToolCallArgs, Delta: string(args)}, {Type: agent.ToolCallEnd}} {
			e.RunID, e.Time, e.ToolCallID = runID, now, c.ID
			sink(e)
		}
	}
}

// The reasons of the interrupts of a paused run: a client tool's result,
// or a person's approval of a call.
const (
	interruptReason         = "tool_call"
	approvalInterruptReason = "approval"
)

// outcome is how the run of the answer ended, for its RUN_FINISHED
// event: success, or for a paused run an interrupt for each call it
// waits on, which names the call by the id the resume answers it by.
func (resp *ExecResponse) outcome() *agui.Outcome {
	if resp.Status != StatusPaused {
		return &agui.Outcome{Type: agui.OutcomeSuccess}
	}
	out := &agui.Outcome{Type: agui.OutcomeInterrupt}
	for _, c := range resp.Calls {
		in := agui.Interrupt{
			ID: c.ID, Reason: interruptReason, ToolCallID: c.ID, ExpiresAt: resp.RunExpires,
			Message:  fmt.Sprintf("the code waits for the result of %s (call %q): POST /runs/%s/resume with it", c.Name, c.ID, resp.RunID),
			Metadata: map[string]any{"run_id": resp.RunID, "tool": c.Name, "blocking": c.Blocking},
		}
		if c.Approval {
			in.Reason, in.Metadata["approval"] = approvalInterruptReason, true
			in.Message = fmt.Sprintf("the code waits for a person's approval of %s (call %q): ask them, then POST /runs/%s/resume with {\"id\": %q, \"approve\": true} to make the call, or false to refuse it (it raises PermissionError in the code)",
				c.Name, c.ID, resp.RunID, c.ID)
		}
		if c.MayHaveRun {
			in.Metadata["may_have_run"] = true
			in.Message += "; the call may have run already (the resume that made it stopped before its outcome was stored): approving it makes it again"
		}
		out.Interrupts = append(out.Interrupts, in)
	}
	return out
}

// resume serves POST /runs/{run_id}/resume: the client's results for a
// paused run's calls; the run goes on, on this instance, and the answer is
// /exec's (completed, or paused again with a new run_id).
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	return h.resumeRun(w, r, ns, r.PathValue("run_id"), nil)
}

// resumeRun resumes run apiRun (the API's run_id) of namespace ns with
// req, or with r's body when req is nil, and answers as POST
// /runs/{run_id}/resume does (the operator console calls it too).
func (h *Handler) resumeRun(w http.ResponseWriter, r *http.Request, ns, apiRun string, req *ResumeRequest) *apiError {
	sessionID, run, ok := parseRunID(apiRun)
	if !ok {
		return &apiError{status: http.StatusNotFound, code: "run_not_found", msg: "no such run: run_id is not one this API gave out"}
	}
	key, aerr := h.requestKey(r)
	if aerr != nil {
		return aerr
	}
	if req == nil {
		req = new(ResumeRequest)
		if aerr := h.readBody(w, r, req); aerr != nil {
			return aerr
		}
	}
	if key != nil {
		canonical, _ := json.Marshal(req)
		key.fingerprint = fingerprint("resume", []byte(apiRun), canonical)
	}
	results, aerr := toolResults(req.Results)
	if aerr != nil {
		return aerr
	}
	if req.Limits.negative() {
		return badRequest("limits must not be negative")
	}
	limits := h.limits(req.Limits)
	return h.withRunSlot(r, func(ctx context.Context) *apiError {
		// A run of a session this API key cannot see is no run at all.
		if _, err := h.opts.Session.Store.Stat(ctx, storeID(ns, sessionID)); errors.Is(err, store.ErrNotFound) {
			return &apiError{status: http.StatusNotFound, code: "run_not_found", msg: "no such run (unknown, or made with another API key)"}
		} else if err != nil {
			return storeError(err)
		}
		if aerr, done := h.decideDriven(ctx, w, ns, sessionID, run, apiRun, req.Results); done {
			return aerr
		}
		op := sessionOp{
			run: apiRun,
			key: key,
			refuse: func(s *session.Session) *apiError {
				p := s.Paused()
				switch {
				case p != nil && p.Previous == run:
					return nil // listed again: the resume is answered with it
				case p == nil || p.RunID != run:
					return runNotPaused(sessionID, apiRun)
				case !time.Now().Before(p.Expires):
					return runExpired(sessionID, apiRun)
				case p.Claim != nil && time.Now().Before(p.Claim.Until):
					return runClaimed(sessionID, apiRun)
				case p.Claim != nil:
					return nil // the claim lapsed: the resume lists the run again
				}
				if err := p.CheckResults(results); err != nil {
					return invalidResults(apiRun, strings.TrimPrefix(err.Error(), session.ErrBadResults.Error()+": "))
				}
				return h.checkApprovals(p, req.Results, apiRun)
			},
			do: func(ctx context.Context, s *session.Session, idem *session.Idempotency) (*session.Result, error) {
				who := h.decider(ns)
				ctx = agent.WithDecider(ctx, who)
				opts := h.approvalPolicy(who, runID(sessionID, run), req.Results, limits).ResumeOptions()
				opts.Idempotency = idem
				res, err := s.ResumeOptions(ctx, run, results, opts)
				if errors.Is(err, store.ErrConflict) {
					err = fmt.Errorf("%w: %w", errResumeRaced, err)
				}
				return res, err
			},
		}
		return h.answer(ctx, w, r, ns, sessionID, op, limits, time.Now())
	})
}

// decideDriven answers a resume of run (apiRun to the client) of session
// sessionID when a monty.v1 feed waits on it for a person's approval
// (session.DecideDriven): the decisions are stored for that feed, which
// makes the approved calls and goes on; the answer is 202 "decided". done
// is false when the run is not such a run: it is resumed as any other.
func (h *Handler) decideDriven(ctx context.Context, w http.ResponseWriter, ns, sessionID, run, apiRun string, specs []ToolResultSpec) (aerr *apiError, done bool) {
	decisions := map[string]bool{}
	for _, r := range specs {
		if r.Approve == nil {
			decisions = nil // not only decisions: DecideDriven refuses them
			break
		}
		decisions[r.ID] = *r.Approve
	}
	_, err := session.DecideDriven(ctx, storeID(ns, sessionID), h.fileOptions(ns, sessionID), run, decisions, h.decider(ns))
	switch {
	case errors.Is(err, session.ErrNotDriven):
		return nil, false
	case errors.Is(err, session.ErrBadResults):
		return invalidResults(apiRun, strings.TrimPrefix(err.Error(), session.ErrBadResults.Error()+": ")+
			" (a monty.v1 feed waits on this run: answer each of its calls with {\"id\": ..., \"approve\": true} or false)"), true
	case err != nil:
		if aerr := runError(err, sessionID, apiRun); aerr != nil {
			return aerr, true
		}
		return storeError(err).named(ns, sessionID), true
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "approval decided for a monty.v1 feed", slog.String("session_id", sessionID), slog.String("run_id", apiRun),
		slog.String("who", h.decider(ns)))
	writeJSON(w, http.StatusAccepted, ExecResponse{Status: StatusDecided, SessionID: sessionID, RunID: apiRun, Result: json.RawMessage("null")})
	return nil, true
}

// decider is who decides the approval calls a request of namespace ns
// answers: its API key's name (Options.KeyNames), else a fingerprint of
// the key, never the key. The fingerprint is an HMAC of the namespace
// under the signing key (the namespace itself is a plain hash of the key,
// which a short key could be guessed from), the same on every instance.
func (h *Handler) decider(ns string) string {
	switch {
	case h.names[ns] != "":
		return h.names[ns]
	case ns == apikey.Public:
		return "anonymous (no API keys configured)"
	}
	mac := hmac.New(sha256.New, h.opts.Session.SigningKey)
	mac.Write([]byte("monty-go/audit-key\x00" + ns))
	return "key " + hex.EncodeToString(mac.Sum(nil)[:8])
}

// runClaimed is the answer to a resume of run runID of session sessionID
// while another resume, here or on another instance, makes its approved
// calls.
func runClaimed(sessionID, runID string) *apiError {
	return &apiError{status: http.StatusConflict, code: "run_not_paused", msg: fmt.Sprintf(
		"run %q of session %q is being resumed elsewhere: another resume claimed it to make its approved calls, and its outcome is stored when it is done; nothing was done for this request", runID, sessionID)}
}

// checkApprovals checks that the results answer the calls of paused run p
// that wait for a person's approval with approve, and only those, and
// that this server can make the approved calls (agent.Approvals.Check).
// specs are the resume's results; calls they name that p does not have
// are CheckResults' to refuse.
func (h *Handler) checkApprovals(p *session.Paused, specs []ToolResultSpec, apiRun string) *apiError {
	if err := h.approvalPolicy("", apiRun, specs, runtime.Limits{}).Check(p); err != nil {
		return err.(*apiError)
	}
	return nil
}

// approvalUnavailable is the answer to a resume that answers approval
// call id (name) of run runID on a server without its MCP server.
func approvalUnavailable(runID, id, name string) *apiError {
	return &apiError{status: http.StatusConflict, code: "approval_unavailable", msg: fmt.Sprintf(
		"call %q of run %q (%s) waits for a person's approval, but this server does not connect the MCP server that makes it; nothing was done: resume the run on a server that connects it under the same name", id, runID, name)}
}

// approvalPolicy is how a resume of run apiRun (of session sessionID, as
// the client names it), decided by who, answers the calls that wait for a
// person's approval (agent.Approvals): the approved calls are made by this
// server, each within the request's time limit (the run's events report
// them as host calls). The claim's lease covers what the resume may take:
// the time limit for each approved call and for the run, and
// session.ClaimMargin (session.DefaultClaimLease without a time limit).
// Its refusals are *apiError.
func (h *Handler) approvalPolicy(who, apiRun string, specs []ToolResultSpec, limits runtime.Limits) agent.Approvals {
	p := agent.Approvals{Functions: h.opts.Functions, Who: who, CallTimeout: limits.MaxDuration, Logger: h.log}
	for _, r := range specs {
		p.Answers = append(p.Answers, agent.Answer{ID: r.ID, Approve: r.Approve})
	}
	claims := 0
	for _, a := range p.Answers {
		if a.Approve != nil && *a.Approve {
			claims++
		}
	}
	switch {
	case h.opts.ClaimLease > 0:
		p.Lease = h.opts.ClaimLease
	case limits.MaxDuration > 0:
		p.Lease = time.Duration(claims+1)*limits.MaxDuration + session.ClaimMargin
	}
	p.Refuse = func(c session.ToolCall, err error) error {
		if errors.Is(err, agent.ErrApprovalUnavailable) {
			name, _ := agent.ApprovalName(h.opts.Functions, c)
			return approvalUnavailable(apiRun, c.ID, name)
		}
		return invalidResults(apiRun, err.Error())
	}
	p.TimedOut = func(c session.ToolCall, name string) error {
		sessionID, _, _ := parseRunID(apiRun)
		return &apiError{status: statusLimit, code: runtime.TimeLimit.String(), body: &ErrorResponse{SessionID: sessionID}, msg: fmt.Sprintf(
			"the approved call %s (call %q) took longer than the time limit of %s and was stopped, and may have had its effect before it was stopped; the run is paused again under a new run_id, the call marked may_have_run: resume run %q to get it and decide again",
			name, c.ID, limits.MaxDuration, apiRun)}
	}
	return p
}
