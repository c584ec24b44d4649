package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/telemetry"
)

// TestApprovedCallAudit: an approved MCP call sends its idempotency key
// in the request's _meta (a call that waited for no approval sends none);
// the decision records the decider the context names, in a span
// (monty.approval, its attributes), a log record, and the session's
// stored decisions.
func TestApprovedCallAudit(t *testing.T) {
	exp, tp := newTracer(t)
	d := newDemoServer(t)
	var rec metaRecorder
	rec.add(d)
	reg, _ := demoNamespace(t, d, mcpclient.Server{Approve: []string{"whoami"}})
	st := memstore.New(memstore.Options{})
	var logs bytes.Buffer
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Session: session.Options{Store: st,
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp})}})

	res := agenttest.Execute(t, e, "t", "r = await demo.whoami()\nr")
	require.NotNil(t, res.Paused, res.Text)
	c := res.Paused.Calls[0]
	assert.Empty(t, rec.take(), "nothing called before the approval")

	ctx := agent.WithDecider(context.Background(), "mcp client claude-desktop")
	res, err := e.Resume(ctx, "t", json.RawMessage(`{"run_id": "`+res.RunID+`", "results": [{"id": "`+c.ID+`", "approve": true}]}`))
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)
	assert.Equal(t, "'me'", res.Text)

	metas := rec.take()
	require.Len(t, metas, 1)
	key, _ := metas[0][mcpclient.MetaIdempotencyKey].(string)
	assert.Regexp(t, `^mgik-[0-9a-f]{32}$`, key)

	id, err := agent.SessionID("t", "")
	require.NoError(t, err)
	s, err := session.Open(context.Background(), id, session.Options{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ds := s.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, session.Decision{Time: ds[0].Time, Who: "mcp client claude-desktop", RunID: ds[0].RunID, CallID: c.ID,
		Tool: "demo.whoami", Args: "demo.whoami()", IdempotencyKey: key, Approved: true, Outcome: session.DecisionOK}, ds[0])
	assert.NotEmpty(t, ds[0].RunID)
	assert.False(t, ds[0].Time.IsZero())

	spans := spansNamed(exp, telemetry.SpanApproval)
	require.Len(t, spans, 1, "%v", spanNames(exp))
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range spans[0].Attributes {
		attrs[kv.Key] = kv.Value
	}
	assert.Equal(t, "mcp client claude-desktop", attrs[telemetry.AttrApprovalWho].AsString())
	assert.Equal(t, "demo.whoami", attrs[telemetry.AttrApprovalTool].AsString())
	assert.Equal(t, c.ID, attrs[telemetry.AttrApprovalCallID].AsString())
	assert.Equal(t, key, attrs[telemetry.AttrApprovalKey].AsString())
	assert.True(t, attrs[telemetry.AttrApprovalApproved].AsBool())
	assert.Equal(t, "ok", attrs[telemetry.AttrApprovalOutcome].AsString())

	var line struct {
		Msg, Who, Tool, Outcome string
		Key                     string `json:"idempotency_key"`
	}
	require.NoError(t, json.Unmarshal(logs.Bytes(), &line), logs.String())
	assert.Equal(t, "approval decision", line.Msg)
	assert.Equal(t, "mcp client claude-desktop", line.Who)
	assert.Equal(t, "demo.whoami", line.Tool)
	assert.Equal(t, "ok", line.Outcome)
	assert.Equal(t, key, line.Key)

	// A call that waits for no approval sends no key.
	plain, _ := demoNamespace(t, d, mcpclient.Server{})
	res = agenttest.Execute(t, agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: plain}), "t", "await demo.whoami()")
	require.NoError(t, res.Err, res.Text)
	metas = rec.take()
	require.Len(t, metas, 1)
	assert.NotContains(t, metas[0], mcpclient.MetaIdempotencyKey)
	assert.Equal(t, mcpclient.LogLevel, metas[0][mcp.MetaKeyLogLevel])
}

// TestApprovedCallClaimed: while one executor (a process) makes an
// approved call, another's resume of the run is refused as being resumed
// elsewhere (ErrBadArgs matching session.ErrRunClaimed), nothing made:
// the run's own claim, which guards the call where claims on sessions are
// each process's only (ManagerOptions.LeaseTTL negative; with claims in
// the store, the second resume waits for the first instead). A
// resume whose approved call is cut off (its context ends) lists the run
// again: a resume of the old run id gets that pause, the call marked as
// may have run, and the text says so; approving it anew makes the call
// again with the same idempotency key.
func TestApprovedCallClaimed(t *testing.T) {
	d := newDemoServer(t)
	started, release := make(chan string, 4), make(chan struct{})
	var calls atomic.Int32
	d.srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			key, _ := req.Params.GetMeta()[mcpclient.MetaIdempotencyKey].(string)
			started <- key
			select {
			case <-release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	st := memstore.New(memstore.Options{})
	newExec := func() *agent.Executor {
		reg, _ := demoNamespace(t, d, mcpclient.Server{Approve: []string{"hang"}})
		keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{LeaseTTL: -1})
		t.Cleanup(keeper.Close)
		return agenttest.NewExecutor(t, agent.ExecutorOptions{Keeper: keeper, Functions: reg, Session: session.Options{Store: st, Limits: runtime.Limits{MaxDuration: time.Minute}}})
	}
	a, b := newExec(), newExec()
	res := agenttest.Execute(t, a, "t", "r = await demo.hang()\nr")
	require.NotNil(t, res.Paused, res.Text)
	c := res.Paused.Calls[0]
	approve := func(e *agent.Executor, ctx context.Context, runID string) (*agent.Result, error) {
		return e.Resume(ctx, "t", json.RawMessage(`{"run_id": "`+runID+`", "results": [{"id": "`+c.ID+`", "approve": true}]}`))
	}

	// A's call is cut off: the run is listed again.
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := approve(a, ctx, res.RunID)
		errs <- err
	}()
	first := <-started
	_, err := approve(b, context.Background(), res.RunID)
	require.ErrorIs(t, err, agent.ErrBadArgs)
	require.ErrorIs(t, err, session.ErrRunClaimed)
	assert.Contains(t, err.Error(), "is being resumed elsewhere")
	cancel()
	require.Error(t, <-errs)
	assert.Equal(t, int32(1), calls.Load())

	again, err := approve(b, context.Background(), res.RunID)
	require.NoError(t, err)
	require.NotNil(t, again.Paused, again.Text)
	assert.Equal(t, res.RunID, again.Paused.PreviousRunID)
	require.Len(t, again.Paused.Calls, 1)
	assert.True(t, again.Paused.Calls[0].MayHaveRun)
	assert.Contains(t, again.Text, "may have run already")
	assert.Equal(t, int32(1), calls.Load(), "the old decision makes nothing")

	close(release)
	done, err := approve(b, context.Background(), again.RunID)
	require.NoError(t, err)
	require.NoError(t, done.Err, done.Text)
	assert.Equal(t, "'done'", done.Text)
	assert.Equal(t, int32(2), calls.Load())
	assert.Equal(t, first, <-started, "the same idempotency key on both attempts")
}
