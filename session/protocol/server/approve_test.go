package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/mcpclient"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/tools"
)

// wiper is an MCP server (the official Go SDK's) whose one tool, wipe, is
// annotated destructive: its calls wait for a person's approval.
type wiper struct{ calls atomic.Int32 }

func (wp *wiper) registry(t *testing.T) *tools.Registry {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "disk", Version: "1"}, nil)
	destructive := true
	srv.AddTool(&mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			wp.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "disk", Transport: func() (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	return reg
}

// feedAsync sends a feed and returns the channel its turn-ending event
// arrives on.
func feedAsync(c *client, code string) <-chan *pb.ChildEvent {
	out := make(chan *pb.ChildEvent, 1)
	go func() { out <- c.turn(feed(code)) }()
	return out
}

// pendingRun waits until session sid waits on a run and returns the
// API's run_id for it and its calls.
func pendingRun(t *testing.T, api *httptest.Server, sid string) httpapi.PausedInfo {
	t.Helper()
	var p *httpapi.PausedInfo
	require.Eventually(t, func() bool {
		_, body := getRaw(t, api, "/state/"+sid+"/info")
		var info httpapi.StateInfo
		require.NoError(t, json.Unmarshal(body, &info))
		p = info.Paused
		return p != nil
	}, 20*time.Second, 10*time.Millisecond)
	return *p
}

func getRaw(t *testing.T, api *httptest.Server, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, api.URL+path, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func decide(t *testing.T, api *httptest.Server, runID, callID string, approve bool) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"results": []map[string]any{{"id": callID, "approve": approve}}})
	req, _ := http.NewRequest(http.MethodPost, api.URL+"/runs/"+runID+"/resume", bytes.NewReader(body))
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func turnLimit(d time.Duration) *pb.ParentRequest {
	us := uint64(d.Microseconds())
	return configure(&pb.Configure{Limits: &pb.ResourceLimits{MaxTurnDurationMicros: &us}})
}

func TestApprovalOverMontyV1(t *testing.T) {
	wp := &wiper{}
	ws, api := sharedServers(t, wp.registry(t))

	// Approved: the feed waits, the server makes the call, the feed ends
	// with its result; the decision is kept with the session.
	c := ws.dial(t)
	ev := c.turn(turnLimit(30 * time.Second))
	sid := string(ev.GetSessionId())
	done := feedAsync(c, "r = await disk.wipe()\nr")
	p := pendingRun(t, api, sid)
	require.Len(t, p.Calls, 1)
	assert.True(t, p.Calls[0].Approval)
	assert.Equal(t, "disk.wipe", p.Calls[0].Name)
	assert.Zero(t, wp.calls.Load(), "nothing is called before the decision")
	status, out := exec(t, api, key, sid, "1")
	assert.Equal(t, http.StatusConflict, status, "the feed holds the session: %v", out)
	status, out = decide(t, api, p.RunID, p.Calls[0].ID, true)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	assert.Equal(t, httpapi.StatusDecided, out["status"])
	assert.Equal(t, object.Str("wiped"), value(t, <-done))
	assert.EqualValues(t, 1, wp.calls.Load())
	status, out = decide(t, api, p.RunID, p.Calls[0].ID, true)
	assert.Equal(t, http.StatusConflict, status, "a run is decided once: %v", out)
	ws.park(t, c)
	assert.EqualValues(t, 1, wp.calls.Load())
	_, body := getRaw(t, api, "/state/"+sid+"/info")
	var info httpapi.StateInfo
	require.NoError(t, json.Unmarshal(body, &info))
	require.Len(t, info.Decisions, 1, "%s", body)
	assert.Equal(t, "ops", info.Decisions[0].Who)
	assert.True(t, info.Decisions[0].Approved)
	assert.Equal(t, "ok", info.Decisions[0].Outcome)
	assert.Nil(t, info.Paused)

	// Denied: PermissionError in the code, nothing called.
	d := ws.dial(t)
	require.NotNil(t, d.turn(load([]byte(sid))).GetOk())
	done = feedAsync(d, "try:\n    await disk.wipe()\nexcept PermissionError as e:\n    out = str(e)\nout")
	p = pendingRun(t, api, sid)
	status, out = decide(t, api, p.RunID, p.Calls[0].ID, false)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	assert.Contains(t, string(value(t, <-done).(object.Str)), "not approved")
	assert.EqualValues(t, 1, wp.calls.Load())
	ws.park(t, d)
}

func TestApprovalNotDecidedInTime(t *testing.T) {
	wp := &wiper{}
	ws, api := sharedServers(t, wp.registry(t))
	c := ws.dial(t)
	sid := string(c.turn(turnLimit(time.Second)).GetSessionId())
	done := feedAsync(c, "try:\n    await disk.wipe()\nexcept PermissionError as e:\n    out = str(e)\nout")
	p := pendingRun(t, api, sid)
	msg := string(value(t, <-done).(object.Str))
	assert.Contains(t, msg, "disk.wipe waits for a person's approval")
	assert.Contains(t, msg, "session "+sid)
	assert.Contains(t, msg, "not called")
	assert.Zero(t, wp.calls.Load())
	// The run was taken back: the feed's end is stored, so a decision
	// now finds the session as the connection holds it, and nothing to
	// decide once it is free; the session runs code again.
	status, out := decide(t, api, p.RunID, p.Calls[0].ID, true)
	assert.Equal(t, http.StatusConflict, status, "%v", out)
	assert.Equal(t, "session_busy", out["error"])
	ws.park(t, c)
	status, out = decide(t, api, p.RunID, p.Calls[0].ID, true)
	assert.Equal(t, http.StatusConflict, status, "%v", out)
	assert.Equal(t, "run_not_paused", out["error"])
	assert.Zero(t, wp.calls.Load())
	status, out = exec(t, api, key, sid, "out")
	require.Equal(t, http.StatusOK, status, "%v", out)

	// Without a store to wait in, nobody is asked.
	e := ws.dial(t)
	e.turn(configure(&pb.Configure{Persistence: pb.Persistence_PERSISTENCE_EPHEMERAL}))
	ev := e.turn(feed("await disk.wipe()"))
	assert.Contains(t, ev.GetError().GetException().GetMessage(), "only a stored session can wait", "%v", ev)
	assert.Zero(t, wp.calls.Load())
}
