package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaIdempotencyKey is where monty puts an approved call's idempotency key
// in the MCP request's _meta (docs/http.md, "Idempotency keys").
const metaIdempotencyKey = "monty-go/idempotency-key"

// chargeServer is an MCP server (streamable HTTP) with one tool, charge,
// whose calls wait for a person's approval (destructiveHint) and which
// counts the calls it receives by their target: the effect the suite
// checks is made at most once.
type chargeServer struct {
	url  string
	hold time.Duration // how long a call takes, so that a kill can land in it
	srv  *http.Server

	mu       sync.Mutex
	calls    map[string][]string // target -> idempotency key of each call
	inFlight map[string]bool     // targets whose call is under way
}

func startChargeServer(hold time.Duration) (*chargeServer, error) {
	c := &chargeServer{hold: hold, calls: map[string][]string{}, inFlight: map[string]bool{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "pay", Version: "1"}, nil)
	destructive := true
	srv.AddTool(&mcp.Tool{Name: "charge", Description: "charges a target once (the fault suite counts the calls)",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Target string `json:"target"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			key, _ := req.Params.Meta[metaIdempotencyKey].(string)
			c.mu.Lock()
			c.calls[args.Target] = append(c.calls[args.Target], key)
			c.inFlight[args.Target] = true
			c.mu.Unlock()
			defer func() {
				c.mu.Lock()
				delete(c.inFlight, args.Target)
				c.mu.Unlock()
			}()
			select {
			case <-time.After(c.hold):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "charged " + args.Target}}}, nil
		})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.url = "http://" + l.Addr().String()
	c.srv = &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go func() { _ = c.srv.Serve(l) }()
	return c, nil
}

func (c *chargeServer) callsOf(target string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls[target]...)
}

func (c *chargeServer) busy(target string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight[target]
}

// approvalRun is what the suite did for one approval: a run paused at
// pay.charge, resumed with approve, and denied if it was listed again as
// "may have run".
type approvalRun struct {
	Session string
	// Outcome is "completed" (the call made, the run over), "relisted"
	// (listed again with may_have_run, then denied), "over" (a resume found
	// the run already over: an earlier try of ours had finished it),
	// "failed" (no answer in time) or "not_paused".
	Outcome string
	Detail  string
	op      *Op // its requests, for the figures and the error policy
}

// runAnswer is a 200 answer to /exec or a resume, as far as approvals go.
type runAnswer struct {
	Status        string `json:"status"`
	RunID         string `json:"run_id"`
	PreviousRunID string `json:"previous_run_id"`
	Calls         []struct {
		ID         string `json:"id"`
		Approval   bool   `json:"approval"`
		MayHaveRun bool   `json:"may_have_run"`
	} `json:"calls"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Type string `json:"type"`
	} `json:"error"`
}

// post sends one POST to an instance and classifies the answer as the
// list client does.
func (c *client) post(ctx context.Context, inst int, path, body, key string) (Attempt, int, []byte) {
	a := Attempt{Instance: inst, Start: time.Now()}
	defer func() { a.End = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, "POST", c.urls[inst]+path, bytes.NewReader([]byte(body)))
	if err != nil {
		a.Class, a.Detail = "request", err.Error()
		return a, 0, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", c.apiKey)
	if key != "" && !c.noKey {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		a.Class, a.Detail, a.End = transportClass(err), err.Error(), time.Now()
		return a, 0, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	a.End = time.Now()
	if err != nil {
		a.Class, a.Detail = transportClass(err), err.Error()
		return a, 0, nil
	}
	a.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	a.RetryAfter = resp.Header.Get("Retry-After") != ""
	if resp.StatusCode == 200 {
		a.Class = "200"
		return a, 200, data
	}
	code, msg := errorCode(data)
	a.Class, a.Detail = strconv.Itoa(resp.StatusCode)+" "+code, msg
	return a, resp.StatusCode, data
}

// driveApprovals runs approvals one after another in one slot.
func (r *scenarioRun) driveApprovals(ctx context.Context, slot int) {
	for n := 0; !r.stop.Load(); n++ {
		sid := fmt.Sprintf("f-%s-%d-%d-%s", r.sc.name, slot, n, randomHex(3))
		run := r.approve(ctx, sid, slot+n)
		r.mu.Lock()
		r.approvals = append(r.approvals, run)
		r.mu.Unlock()
	}
}

// approve pauses a run at pay.charge in session sid, approves the call and
// follows the run to its end: retries on errors with the same key, on the
// other instance; a run listed again as "may have run" is denied (a person
// would not approve a second charge).
func (r *scenarioRun) approve(ctx context.Context, sid string, first int) *approvalRun {
	op := &Op{Session: sid, Kind: Append, Value: sid, Call: time.Now()}
	run := &approvalRun{Session: sid, op: op}
	defer func() {
		op.Return = time.Now()
		if run.Outcome == "completed" || run.Outcome == "relisted" {
			op.Outcome = Acked
		} else {
			op.Outcome = Unknown
		}
	}()
	deadline := op.Call.Add(r.client.opTimeout)
	// send tries one request until an answer other than a retriable error;
	// it returns the status and body of that answer (0 when it gave up).
	send := func(path, body, key string, retry func(status int, code, msg string) bool) (int, []byte) {
		for n := 0; ; n++ {
			inst := (first + n) % 2
			if strings.HasSuffix(path, "/resume") {
				r.mu.Lock()
				r.resuming[sid] = inst
				r.mu.Unlock()
			}
			a, status, data := r.client.post(ctx, inst, path, body, key)
			r.mu.Lock()
			delete(r.resuming, sid)
			r.mu.Unlock()
			op.Attempts = append(op.Attempts, a)
			code, msg := "", ""
			if status != 200 {
				code, msg = errorCode(data)
			}
			if status == 200 || (status != 0 && !retry(status, code, msg)) {
				return status, data
			}
			wait := min(50*time.Millisecond<<min(n, 4), 500*time.Millisecond)
			if time.Now().Add(wait).After(deadline) {
				return 0, nil
			}
			time.Sleep(wait)
		}
	}
	retriable := func(status int, code, msg string) bool {
		switch status {
		case 429, 500, 503:
			return true
		case 409:
			// The run is being resumed elsewhere (a claim holds until its
			// lease lapses), the session busy, a key in flight.
			return code == "session_busy" || code == "conflict" || code == "idempotency_key_in_flight" ||
				code == "approval_unavailable" || (code == "run_not_paused" && strings.Contains(msg, "elsewhere"))
		}
		return false
	}
	code := fmt.Sprintf("r = await pay.charge(target=%q)\nr", sid)
	body, _ := json.Marshal(map[string]any{"code": code, "session_id": sid, "limits": map[string]int{"duration_ms": r.client.limitMS}})
	status, data := send("/exec", string(body), "fk-"+sid+"-exec", retriable)
	var ans runAnswer
	if status != 200 || json.Unmarshal(data, &ans) != nil || ans.Status != "paused" || len(ans.Calls) != 1 || !ans.Calls[0].Approval {
		run.Outcome, run.Detail = "not_paused", fmt.Sprintf("status %d: %.200s", status, data)
		return run
	}
	approve := true
	for step := 0; step < 4; step++ {
		rb := fmt.Sprintf(`{"results": [{"id": %q, "approve": %v}]}`, ans.Calls[0].ID, approve)
		status, data = send("/runs/"+ans.RunID+"/resume", rb, fmt.Sprintf("fk-%s-resume-%d", sid, step), retriable)
		switch {
		case status == 0:
			run.Outcome, run.Detail = "failed", "no answer before the deadline"
			return run
		case status == 409:
			c, m := errorCode(data)
			run.Outcome, run.Detail = "over", c+": "+m
			return run
		case status != 200:
			run.Outcome, run.Detail = "failed", fmt.Sprintf("status %d: %.200s", status, data)
			return run
		}
		ans = runAnswer{}
		if err := json.Unmarshal(data, &ans); err != nil {
			run.Outcome, run.Detail = "failed", err.Error()
			return run
		}
		if ans.Status != "paused" {
			if approve {
				run.Outcome = "completed"
			} else {
				run.Outcome = "relisted"
			}
			if ans.Error != nil {
				run.Detail = ans.Error.Type
			}
			return run
		}
		if len(ans.Calls) != 1 || !ans.Calls[0].MayHaveRun {
			run.Outcome, run.Detail = "failed", fmt.Sprintf("paused again without may_have_run: %.200s", data)
			return run
		}
		approve = false // a person refuses a charge that may have been made
	}
	run.Outcome = "failed"
	return run
}

// checkApprovals: every approved call made at most once; a run that
// completed made its call exactly once.
func (r *scenarioRun) checkApprovals() (vs []Violation, summary string) {
	counts := map[string]int{}
	calls := 0
	for _, a := range r.approvals {
		n := len(r.charge.callsOf(a.Session))
		calls += n
		counts[a.Outcome]++
		switch {
		case n > 1:
			vs = append(vs, Violation{"approved_call_twice", a.Session, fmt.Sprintf("pay.charge was made %d times (idempotency keys %v); the run ended %s %s", n, r.charge.callsOf(a.Session), a.Outcome, a.Detail)})
		case a.Outcome == "completed" && n != 1:
			vs = append(vs, Violation{"approved_call_missing", a.Session, "the run completed with the call approved, yet the call was not made"})
		case a.Outcome == "failed" || a.Outcome == "not_paused":
			vs = append(vs, Violation{"approval_failed", a.Session, a.Detail})
		}
	}
	summary = fmt.Sprintf("%d approvals: %d completed, %d listed again as may_have_run and denied, %d found over by a retry, %d failed; %d calls made, at most one per approval: %v",
		len(r.approvals), counts["completed"], counts["relisted"], counts["over"], counts["failed"]+counts["not_paused"], calls, len(vs) == 0)
	return vs, summary
}

// killDuringCall waits (up to 5 s) until an approved call is under way for a
// resume sent to instance #0, then SIGKILLs that instance: the claim is
// stored, the call is being made, the answer never comes.
func (r *scenarioRun) killDuringCall() error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		var targets []string
		for sid, inst := range r.resuming {
			if inst == 0 {
				targets = append(targets, sid)
			}
		}
		r.mu.Unlock()
		for _, t := range targets {
			if r.charge.busy(t) {
				r.e.killInstance(r.instances[0])
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.e.killInstance(r.instances[0])
	return nil
}
