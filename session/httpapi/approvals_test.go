package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// mcpTools is an MCP server of the official Go SDK in this process,
// counting the calls each tool served: echo (listed in Approve by
// approvalRegistry), wipe (annotated destructiveHint), add (neither), and
// stall (in Approve; it returns when its request is cancelled).
type mcpTools struct {
	srv              *mcp.Server
	echoes, wipes    atomic.Int32
	adds, stallCalls atomic.Int32
}

func newMCPTools() *mcpTools {
	m := &mcpTools{srv: mcp.NewServer(&mcp.Implementation{Name: "everything", Version: "1"}, nil)}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	m.srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.echoes.Add(1)
			var args struct{ Message string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return text("echo: " + args.Message), nil
		})
	destructive := true
	m.srv.AddTool(&mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.wipes.Add(1)
			return text("wiped"), nil
		})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type addOut struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(m.srv, &mcp.Tool{Name: "add"}, func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		m.adds.Add(1)
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	m.srv.AddTool(&mcp.Tool{Name: "stall", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.stallCalls.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	return m
}

// approvalRegistry connects a new client of the server as the namespace
// "everything", its echo and stall waiting for approval: each registry is
// one server's (one process's) connection.
func (m *mcpTools) approvalRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "everything", Approve: []string{"echo", "stall"},
		Transport: func() (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := m.srv.Connect(context.Background(), serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	return reg
}

// completedAnswer decodes a 200 answer that must have completed without
// an exception.
func completedAnswer(t *testing.T, status int, body []byte) httpapi.ExecResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, status, string(body))
	var resp httpapi.ExecResponse
	require.NoError(t, json.Unmarshal(body, &resp))
	require.Equal(t, httpapi.StatusCompleted, resp.Status, string(body))
	require.Nil(t, resp.Error, string(body))
	return resp
}

// errorMessage decodes an error answer's message.
func errorMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e httpapi.ErrorResponse
	require.NoError(t, json.Unmarshal(body, &e))
	return e.Message
}

const approvalCode = `n = await everything.add(a=1, b=2)
try:
    r = await everything.echo(message="hi")
except PermissionError as e:
    r = "refused: " + str(e)
(n["sum"], r)`

// TestApprovals: an MCP tool that waits for a person's approval pauses
// the run at its call, which nothing has made yet; the paused answer
// marks it "approval" under the name the code calls it by. A value or an
// error cannot answer it (400, and still nothing is called); approved on
// another instance sharing the store, that instance makes the real call
// and the code goes on with its result; refused, the call raises
// PermissionError in the code. An instance without the MCP server
// refuses to answer it (409), and does nothing.
func TestApprovals(t *testing.T) {
	m := newMCPTools()
	st := memstore.New(memstore.Options{})
	a := newServer(t, httpapi.Options{Session: session.Options{Store: st}, Functions: m.approvalRegistry(t)}).client("")
	b := newServer(t, httpapi.Options{Session: session.Options{Store: st}, Functions: m.approvalRegistry(t)}).client("")
	bare := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")

	body, _ := json.Marshal(map[string]any{"code": approvalCode})
	status, _, data := a.do("POST", "/exec", body)
	p := pausedAnswer(t, status, data)
	require.Len(t, p.Calls, 1, string(data))
	call := p.Calls[0]
	assert.Equal(t, "everything.echo", call.Name)
	assert.True(t, call.Approval)
	assert.Equal(t, map[string]json.RawMessage{"message": json.RawMessage(`"hi"`)}, call.Kwargs)
	assert.Equal(t, int32(1), m.adds.Load(), "a tool that needs no approval runs as the code calls it")
	assert.Equal(t, int32(0), m.echoes.Load(), "nothing runs before the approval")

	resume := func(c *client, runID string, results ...map[string]any) (int, []byte) {
		status, _, data := c.do("POST", "/runs/"+runID+"/resume", resumeBody(results...))
		return status, data
	}
	status, data = resume(b, p.RunID, map[string]any{"id": call.ID, "value": "echo: hi"})
	wantError(t, "a value for an approval", status, data, http.StatusBadRequest, "invalid_results")
	assert.Contains(t, errorMessage(t, data), `waits for a person's approval: answer it with {"id": "`+call.ID+`", "approve": true}`)
	status, data = resume(b, p.RunID, map[string]any{"id": call.ID, "error": map[string]any{"type": "ValueError"}})
	wantError(t, "an error for an approval", status, data, http.StatusBadRequest, "invalid_results")
	status, data = resume(b, p.RunID, map[string]any{"id": call.ID, "approve": true, "value": 1})
	wantError(t, "approve and a value", status, data, http.StatusBadRequest, "invalid_request")
	status, data = resume(bare, p.RunID, map[string]any{"id": call.ID, "approve": true})
	wantError(t, "approve on a server without the MCP server", status, data, http.StatusConflict, "approval_unavailable")
	status, data = resume(bare, p.RunID, map[string]any{"id": call.ID, "value": "echo: hi"})
	wantError(t, "a value, on a server without the MCP server", status, data, http.StatusBadRequest, "invalid_results")
	// The call's id spelled another way is no other call.
	for _, other := range []string{"0" + call.ID, "+" + call.ID, call.ID + " "} {
		status, data = resume(b, p.RunID, map[string]any{"id": other, "value": "echo: hi"})
		wantError(t, "a value for "+other, status, data, http.StatusBadRequest, "invalid_results")
		status, data = resume(b, p.RunID, map[string]any{"id": other, "approve": true})
		wantError(t, "approve for "+other, status, data, http.StatusBadRequest, "invalid_results")
	}
	assert.Equal(t, int32(0), m.echoes.Load(), "a refused resume calls nothing")

	// Approved on another instance: it makes the call, once.
	status, data = resume(b, p.RunID, map[string]any{"id": call.ID, "approve": true})
	done := completedAnswer(t, status, data)
	assert.JSONEq(t, `[3, "echo: hi"]`, string(done.Result))
	assert.Equal(t, int32(1), m.echoes.Load())
	status, data = resume(a, p.RunID, map[string]any{"id": call.ID, "approve": true})
	wantError(t, "approve twice", status, data, http.StatusConflict, "run_not_paused")
	assert.Equal(t, int32(1), m.echoes.Load(), "a run is resumed once: so is its call made")

	// Refused: PermissionError at the call.
	status, _, data = a.do("POST", "/exec", body)
	p = pausedAnswer(t, status, data)
	status, data = resume(b, p.RunID, map[string]any{"id": p.Calls[0].ID, "approve": false})
	done = completedAnswer(t, status, data)
	assert.JSONEq(t, `[3, "refused: everything.echo was not approved: a person refused the call"]`, string(done.Result))
	assert.Equal(t, int32(1), m.echoes.Load(), "a refused call is not made")
}

// TestApprovalsWithClientTools: a run paused at once at a client tool and
// at a call that waits for approval lists both, only the latter marked;
// approve answers only the latter. A destructiveHint tool waits for
// approval without being listed in Approve. An approved call that passes
// the resume's time limit is stopped with 422 time_limit, and the run
// stays paused.
func TestApprovalsWithClientTools(t *testing.T) {
	m := newMCPTools()
	c := newServer(t, httpapi.Options{Functions: m.approvalRegistry(t)}).client("")
	body, _ := json.Marshal(map[string]any{
		"code": `import asyncio
city, echoed = await asyncio.gather(ask("city"), everything.echo(message="x"))
try:
    w = await everything.wipe()
except PermissionError as e:
    w = type(e).__name__
try:
    s = await everything.stall()
except PermissionError:
    s = "not approved"
(city, echoed, w, s)`,
		"tools": []map[string]any{{"name": "ask", "async": true}},
	})
	status, _, data := c.do("POST", "/exec", body)
	p := pausedAnswer(t, status, data)
	require.Len(t, p.Calls, 2, string(data))
	ask, echo := p.Calls[0], p.Calls[1]
	assert.Equal(t, "ask", ask.Name)
	assert.False(t, ask.Approval, "a client tool's call is answered with a value")
	assert.Equal(t, "everything.echo", echo.Name)
	assert.True(t, echo.Approval)

	resume := func(runID string, results ...map[string]any) (int, []byte) {
		status, _, data := c.do("POST", "/runs/"+runID+"/resume", resumeBody(results...))
		return status, data
	}
	status, data = resume(p.RunID, map[string]any{"id": ask.ID, "approve": true}, map[string]any{"id": echo.ID, "approve": true})
	wantError(t, "approve for a client tool", status, data, http.StatusBadRequest, "invalid_results")
	assert.Contains(t, errorMessage(t, data), "does not wait for approval")
	assert.Equal(t, int32(0), m.echoes.Load(), "a refused resume makes no call, not even the approved one")

	status, data = resume(p.RunID, map[string]any{"id": ask.ID, "value": "Oslo"}, map[string]any{"id": echo.ID, "approve": true})
	p = pausedAnswer(t, status, data)
	assert.Equal(t, int32(1), m.echoes.Load())
	require.Len(t, p.Calls, 1, string(data))
	assert.Equal(t, "everything.wipe", p.Calls[0].Name, "destructiveHint: waits for approval")
	assert.True(t, p.Calls[0].Approval)
	status, data = resume(p.RunID, map[string]any{"id": p.Calls[0].ID, "approve": false})
	p = pausedAnswer(t, status, data)
	assert.Equal(t, int32(0), m.wipes.Load())
	require.Len(t, p.Calls, 1, string(data))
	assert.Equal(t, "everything.stall", p.Calls[0].Name)

	// The approved call runs under the resume's limits.
	stall, _ := json.Marshal(map[string]any{"results": []map[string]any{{"id": p.Calls[0].ID, "approve": true}}, "limits": map[string]any{"duration_ms": 200}})
	status, _, data = c.do("POST", "/runs/"+p.RunID+"/resume", stall)
	wantError(t, "an approved call past the time limit", status, data, http.StatusUnprocessableEntity, "time_limit")
	var limited httpapi.ErrorResponse
	require.NoError(t, json.Unmarshal(data, &limited))
	assert.Equal(t, p.SessionID, limited.SessionID)
	assert.Contains(t, limited.Message, "the approved call everything.stall")
	assert.Contains(t, limited.Message, "may have had its effect")
	assert.Equal(t, int32(1), m.stallCalls.Load())
	// The call may have run: the run is listed again under a new run_id,
	// and a resume of the old one gets that listing, nothing made.
	status, data = resume(p.RunID, map[string]any{"id": p.Calls[0].ID, "approve": true})
	relisted := pausedAnswer(t, status, data)
	assert.Equal(t, p.RunID, relisted.PreviousRunID)
	assert.NotEqual(t, p.RunID, relisted.RunID)
	require.Len(t, relisted.Calls, 1, string(data))
	assert.True(t, relisted.Calls[0].MayHaveRun)
	assert.Equal(t, int32(1), m.stallCalls.Load(), "an old decision does not make the call again")
	status, data = resume(relisted.RunID, map[string]any{"id": p.Calls[0].ID, "approve": false})
	done := completedAnswer(t, status, data)
	assert.JSONEq(t, `["Oslo", "echo: x", "PermissionError", "not approved"]`, string(done.Result))
}

// TestStreamApprovals: a streamed run paused at a call that waits for
// approval reports it as a tool call under the code's name and ends with
// an interrupt of reason "approval"; a streamed resume that answers it
// with a value gets the JSON 400 before any frame; approved, the stream
// reports the real call as the run's tool call, with its result.
func TestStreamApprovals(t *testing.T) {
	m := newMCPTools()
	c := newServer(t, httpapi.Options{Functions: m.approvalRegistry(t)}).client("")
	body, _ := json.Marshal(map[string]any{"code": approvalCode})
	evs := c.streamPost(t, "/exec", body).rest()
	brief := briefEvents(evs)
	assert.Contains(t, brief, `TOOL_CALL_START "everything.add"`)
	assert.Contains(t, brief, `TOOL_CALL_START "everything.echo"`)
	last := evs[len(evs)-1]
	p := finished(t, last)
	require.Len(t, p.Calls, 1)
	id := p.Calls[0].ID
	assert.Equal(t, map[string]any{"type": "interrupt", "interrupts": []any{map[string]any{
		"id": id, "reason": "approval", "toolCallId": id, "expiresAt": p.RunExpires,
		"message": `the code waits for a person's approval of everything.echo (call "` + id + `"): ask them, then POST /runs/` + p.RunID +
			`/resume with {"id": "` + id + `", "approve": true} to make the call, or false to refuse it (it raises PermissionError in the code)`,
		"metadata": map[string]any{"run_id": p.RunID, "tool": "everything.echo", "blocking": p.Calls[0].Blocking, "approval": true},
	}}}, last["outcome"])
	assert.Equal(t, int32(0), m.echoes.Load())

	bad := resumeBody(map[string]any{"id": id, "value": "forged"})
	status, hdr, streamed := c.do("POST", "/runs/"+p.RunID+"/resume", bad, "Accept", "text/event-stream")
	assert.Equal(t, http.StatusBadRequest, status, string(streamed))
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	_, _, plain := c.do("POST", "/runs/"+p.RunID+"/resume", bad)
	assert.JSONEq(t, string(plain), string(streamed))
	assert.Equal(t, int32(0), m.echoes.Load())

	evs = c.streamPost(t, "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": id, "approve": true})).rest()
	assert.Equal(t, int32(1), m.echoes.Load())
	assert.Equal(t, []string{"RUN_STARTED", "STEP_STARTED", `TOOL_CALL_START "everything.echo"`, `TOOL_CALL_ARGS "{\"message\":\"hi\"}"`,
		"TOOL_CALL_END", `TOOL_CALL_RESULT "\"echo: hi\""`, "STEP_FINISHED", "CUSTOM", "RUN_FINISHED"}, briefEvents(evs),
		"the approved call is the resumed run's host call, then the decision")
	decision := evs[len(evs)-2]
	assert.Equal(t, "approval_decision", decision["name"])
	value, _ := decision["value"].(map[string]any)
	assert.Equal(t, "anonymous (no API keys configured)", value["who"])
	assert.Equal(t, "everything.echo", value["tool"])
	assert.Equal(t, "ok", value["outcome"])
	assert.Equal(t, true, value["approved"])
	assert.Regexp(t, `^mgik-[0-9a-f]{32}$`, value["idempotency_key"])
	done := finished(t, evs[len(evs)-1])
	assert.Equal(t, httpapi.StatusCompleted, done.Status)
	assert.JSONEq(t, `[3, "echo: hi"]`, string(done.Result))
	assert.Equal(t, map[string]any{"type": "success"}, evs[len(evs)-1]["outcome"])
}

// A resume of a run another instance is resuming (making its approved
// call) waits for that one's claim on the session in the store, and is
// answered with what it left: here the run listed again, the call marked
// as may have run (its resume's time limit ended while it stalled); the
// call is made once. Without claims in the store (LeaseTTL negative: one
// instance per store), the run's own claim answers 409 run_not_paused with
// Retry-After: the time left on that claim.
func TestClaimedRunSaysWhenToRetry(t *testing.T) {
	for _, leases := range []bool{true, false} {
		t.Run(fmt.Sprintf("leases=%v", leases), func(t *testing.T) {
			m := newMCPTools()
			st := memstore.New(memstore.Options{})
			opts := httpapi.Options{Session: session.Options{Store: st}, Functions: m.approvalRegistry(t), ClaimLease: 30 * time.Second}
			if !leases {
				opts.Keeper = newKeeperWithout(t, st)
			}
			a := newServer(t, opts).client("")
			opts.Functions = m.approvalRegistry(t)
			if !leases {
				opts.Keeper = newKeeperWithout(t, st)
			}
			b := newServer(t, opts).client("")
			body, _ := json.Marshal(map[string]any{"code": "await everything.stall()", "limits": map[string]any{"duration_ms": 2000}})
			status, _, data := a.do("POST", "/exec", body)
			p := pausedAnswer(t, status, data)
			approve := resumeBody(map[string]any{"id": p.Calls[0].ID, "approve": true})
			// The first resume holds the session up to its time limit (2 s:
			// the approved call stalls), shorter than the second's (the
			// server's 5 s), which, with claims in the store, waits for it.
			quick, _ := json.Marshal(map[string]any{"results": []map[string]any{{"id": p.Calls[0].ID, "approve": true}}, "limits": map[string]any{"duration_ms": 2000}})
			done := make(chan int)
			go func() {
				status, _, _ := a.do("POST", "/runs/"+p.RunID+"/resume", quick)
				done <- status
			}()
			require.Eventually(t, func() bool { return m.stallCalls.Load() == 1 }, 10*time.Second, 5*time.Millisecond, "the approved call is being made")
			status, header, data := b.do("POST", "/runs/"+p.RunID+"/resume", approve)
			if leases {
				again := pausedAnswer(t, status, data)
				require.Len(t, again.Calls, 1)
				assert.True(t, again.Calls[0].MayHaveRun, "%s", data)
				assert.Equal(t, p.RunID, again.PreviousRunID)
			} else {
				wantError(t, "claimed elsewhere", status, data, http.StatusConflict, "run_not_paused")
				wait, err := strconv.Atoi(header.Get("Retry-After"))
				require.NoError(t, err, "Retry-After: %q", header.Get("Retry-After"))
				assert.True(t, wait >= 25 && wait <= 30, "the claim's lease is left: %d s", wait)
			}
			<-done
			assert.EqualValues(t, 1, m.stallCalls.Load(), "the approved call is made once")
		})
	}
}

// newKeeperWithout is a keeper whose claims are this process's only.
func newKeeperWithout(t *testing.T, st store.Store) *session.Manager {
	k := session.NewManager(session.Options{Store: st}, session.ManagerOptions{Warm: -1, LeaseTTL: -1})
	t.Cleanup(k.Close)
	return k
}
