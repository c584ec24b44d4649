package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// demoServer is an MCP server of the official Go SDK, in this process,
// with tools of every kind a namespace must handle. Each connection gets
// a server session of its own; kill ends the live ones, as a crash would.
type demoServer struct {
	srv      *mcp.Server
	mu       sync.Mutex
	sessions []*mcp.ServerSession
	connects atomic.Int32
}

func newDemoServer(t *testing.T) *demoServer {
	t.Helper()
	d := &demoServer{srv: mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1"}, nil)}
	type sumIn struct {
		A int `json:"a" jsonschema:"the first addend"`
		B int `json:"b,omitempty" jsonschema:"the second addend"`
	}
	type sumOut struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(d.srv, &mcp.Tool{Name: "get-sum", Description: "Add two integers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	d.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo a message.", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"message":{"type":"string"},"user-id":{"type":"integer"}},"required":["message"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return text(fmt.Sprintf("%v/%v", args["message"], args["user-id"])), nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("the index is down")
			res.IsError = true
			return res, nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "picture", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a dot"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			}}, nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "steps", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N int }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			token := req.Params.GetProgressToken()
			for i := 1; i <= args.N && token != nil; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(args.N), Message: fmt.Sprintf("step %d", i)})
				// The work of a step: a notification is delivered on its
				// own, so one sent just before the result could overtake it.
				time.Sleep(20 * time.Millisecond)
			}
			return text("done"), nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "chatty", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "too fine to send"})
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "db", Data: map[string]any{"slow": true}})
			time.Sleep(20 * time.Millisecond) // a notification is delivered on its own
			return text("ok"), nil
		})
	d.srv.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done() // until the client cancels the request
			return nil, ctx.Err()
		})
	return d
}

// transport connects a new client to the server, as Server.Transport.
func (d *demoServer) transport(t *testing.T) func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		ss, err := d.srv.Connect(context.Background(), serverSide, nil)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		d.sessions = append(d.sessions, ss)
		d.mu.Unlock()
		d.connects.Add(1)
		return clientSide, nil
	}
}

func (d *demoServer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ss := range d.sessions {
		_ = ss.Close()
	}
	d.sessions = nil
}

func demoNamespace(t *testing.T, d *demoServer, srv mcpclient.Server) (*tools.Registry, *mcpclient.Namespace) {
	t.Helper()
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	srv.Name = "demo"
	srv.Transport = d.transport(t)
	ns, err := mcpclient.Add(context.Background(), reg, srv)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	return reg, ns
}

// TestNamespace: an MCP server's tools are async methods of a
// namespace object: gatherable, with their results as Python values, the
// server's errors as exceptions, names mapped to identifiers.
func TestNamespace(t *testing.T) {
	d := newDemoServer(t)
	reg, _ := demoNamespace(t, d, mcpclient.Server{})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})

	assert.Equal(t, "3 'hi/<nil>' 'x/7'", agenttest.OK(t, e, "t", `import asyncio
s, a, b = await asyncio.gather(demo.get_sum(a=1, b=2), demo.echo(message="hi"), demo.echo("x", user_id=7))
print(s["sum"], repr(a), repr(b))`))
	assert.Equal(t, "caught: demo.fail failed: the index is down", agenttest.OK(t, e, "t", `try:
    await demo.fail()
except RuntimeError as err:
    print("caught:", err)`))
	assert.Equal(t, "['a dot', {'type': 'image', 'mime_type': 'image/png', 'data': b'\\x89PNG'}]", agenttest.OK(t, e, "t", "await demo.picture()"))

	// The arguments are checked before anything is sent.
	res := agenttest.Execute(t, e, "t", `await demo.get_sum(b=2)`)
	assert.Contains(t, res.Text, "TypeError: demo.get_sum() missing 1 required argument(s): 'a'")
	res = agenttest.Execute(t, e, "t", `await demo.echo(message=1)`)
	assert.Contains(t, res.Text, "TypeError: demo.echo() argument 'message' must be str, not int")
	res = agenttest.Execute(t, e, "t", `await demo.nope()`)
	assert.Contains(t, res.Text, "AttributeError: 'demo' object has no attribute 'nope'")

	// help and list_functions show the tools.
	text := agenttest.OK(t, e, "t", "help(demo)")
	assert.Contains(t, text, "get_sum(a: int, b: int = None)")
	assert.Contains(t, agenttest.OK(t, e, "t", "help()"), "demo: block, chatty, echo, fail, get_sum, picture, steps")
	assert.Contains(t, agenttest.OK(t, e, "t", "[f['name'] for f in list_functions('demo')]"), "'demo.get_sum'")
}

// A tool's progress notifications become the run's progress events,
// between the call's start and its result.
func TestMCPProgressEvents(t *testing.T) {
	d := newDemoServer(t)
	reg, _ := demoNamespace(t, d, mcpclient.Server{})
	e := agenttest.NewExecutorWith(t, agent.ExecutorOptions{Functions: reg})
	var events []agent.Event
	res, err := e.ExecuteEvents(context.Background(), "t", agenttest.CodeArgs("await demo.steps(n=3)"), func(ev agent.Event) { events = append(events, ev) })
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)
	var kinds []string
	for _, ev := range events {
		switch ev.Type {
		case agent.ToolCallProgress:
			kinds = append(kinds, fmt.Sprintf("progress %g/%g %s", ev.Progress, ev.Total, ev.Delta))
		case agent.ToolCallStart, agent.ToolCallResult:
			kinds = append(kinds, string(ev.Type)+" "+ev.ToolName)
		}
	}
	assert.Equal(t, []string{"tool_call_start demo.steps", "progress 1/3 step 1", "progress 2/3 step 2", "progress 3/3 step 3", "tool_call_result "}, kinds)

	// The server's log messages while a call is under way are events of
	// the call (those below LogLevel are not sent).
	events = nil
	res, err = e.ExecuteEvents(context.Background(), "t", agenttest.CodeArgs("await demo.chatty()"), func(ev agent.Event) { events = append(events, ev) })
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)
	var logs []string
	for _, ev := range events {
		if ev.Type == agent.ToolCallLog {
			logs = append(logs, ev.Level+" "+ev.Delta)
		}
	}
	assert.Equal(t, []string{`warning db: {"slow":true}`}, logs)
}

// A server that goes away fails the call with OSError; the next
// call connects again. A run stopped by its time limit cancels the
// request it waits on.
func TestMCPReconnectAndCancel(t *testing.T) {
	d := newDemoServer(t)
	reg, _ := demoNamespace(t, d, mcpclient.Server{})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, Session: session.Options{Limits: runtime.Limits{MaxDuration: 300 * time.Millisecond}}})
	assert.Equal(t, "3", agenttest.OK(t, e, "t", "(await demo.get_sum(a=1, b=2))['sum']"))
	d.kill()
	res := agenttest.Execute(t, e, "t", "await demo.get_sum(a=1)")
	assert.Contains(t, res.Text, "OSError: the MCP server demo went away during get-sum()")
	assert.Equal(t, "5", agenttest.OK(t, e, "t", "(await demo.get_sum(a=2, b=3))['sum']"))
	assert.Equal(t, int32(2), d.connects.Load())
	d.kill()
	assert.Equal(t, "caught: the MCP server demo went away", agenttest.OK(t, e, "t", "try:\n    await demo.get_sum(a=1)\nexcept OSError as err:\n    print('caught:', str(err)[:29])"))

	res = agenttest.Execute(t, e, "t", "await demo.block()")
	assert.Equal(t, "TimeoutError", res.ErrorType, res.Text)
	// The server saw the cancellation: the connection still serves calls.
	assert.Equal(t, "7", agenttest.OK(t, e, "t", "(await demo.get_sum(a=3, b=4))['sum']"))
}

// Filters choose the tools; two tools whose names map to the same Python
// name are refused.
func TestMCPFiltersAndNames(t *testing.T) {
	d := newDemoServer(t)
	reg, _ := demoNamespace(t, d, mcpclient.Server{Allow: []string{"echo", "get-sum", "fail"}, Deny: []string{"fail"}})
	e := agenttest.NewExecutorWith(t, agent.ExecutorOptions{Functions: reg})
	assert.Contains(t, agenttest.OK(t, e, "t", "help()"), "demo: echo, get_sum")

	for name, want := range map[string]string{"get-sum": "get_sum", "2fa": "tool_2fa", "class": "class_", "_x": "x", "a.b/c": "a_b_c", "": "tool_"} {
		assert.Equal(t, want, tools.PythonName(name), name)
	}
	d.srv.AddTool(&mcp.Tool{Name: "get_sum", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	reg2, err := tools.NewRegistry()
	require.NoError(t, err)
	_, err = mcpclient.Add(context.Background(), reg2, mcpclient.Server{Name: "demo", Transport: d.transport(t)})
	require.ErrorIs(t, err, mcpclient.ErrServer)
	assert.Contains(t, err.Error(), `tools "get-sum" and "get_sum" are both get_sum in Python`)

	_, err = mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "demo", Transport: d.transport(t)})
	require.ErrorIs(t, err, tools.ErrInvalidFunction, "the name is taken")
	_, err = mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "_hidden", Transport: d.transport(t)})
	require.ErrorIs(t, err, tools.ErrInvalidFunction)
}

// A tools/list_changed notification refreshes the namespace.
func TestMCPToolsChanged(t *testing.T) {
	d := newDemoServer(t)
	reg, _ := demoNamespace(t, d, mcpclient.Server{})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	d.srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil
		})
	require.Eventually(t, func() bool {
		return strings.Contains(agenttest.OK(t, e, "t", "help()"), "late")
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, "'here'", agenttest.OK(t, e, "t", "await demo.late()"))
	// Type checks know the new tool too.
	res, err := e.Execute(context.Background(), "t", json.RawMessage(`{"code": "await demo.late()", "type_check": true}`))
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)
	res, err = e.Execute(context.Background(), "t", json.RawMessage(`{"code": "await demo.later()", "type_check": true}`))
	require.NoError(t, err)
	assert.Equal(t, agent.TypeCheckErrorType, res.ErrorType, res.Text)
}

// The stubs declare each namespace as an object whose methods are the
// tools, so the type checker refuses a wrong argument before anything
// runs.
func TestMCPStubs(t *testing.T) {
	d := newDemoServer(t)
	reg, _ := demoNamespace(t, d, mcpclient.Server{Allow: []string{"get-sum", "echo"}})
	stubs := reg.Stubs()
	assert.Contains(t, stubs, "class _demo_tools:")
	assert.Contains(t, stubs, "\n_get_sum_result = TypedDict(\"_get_sum_result\", {\"sum\": int})\n")
	assert.Contains(t, stubs, "async def get_sum(self, a: int, b: int | None = None) -> _get_sum_result:")
	assert.Contains(t, stubs, "async def echo(self, message: str, user_id: int | None = None) -> Any:")
	assert.Contains(t, stubs, "\ndemo: _demo_tools\n")
}

// Schemas become the stubs' types, checked by the real checker: an enum
// is a Literal, a nested object a TypedDict, the output schema the
// result's type; a wrong argument name, value or key is refused before
// anything runs.
func TestMCPSchemaTypesTypeCheck(t *testing.T) {
	d := newDemoServer(t)
	d.srv.AddTool(&mcp.Tool{Name: "search-issues", Description: "Search the issues.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"query":{"type":"string"},
			"filter":{"type":"object","properties":{"state":{"enum":["open","closed"]},"labels":{"type":"array","items":{"type":"string"}}},"required":["state"]},
			"limit":{"type":["integer","null"]}},"required":["query"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"total":{"type":"integer"},"titles":{"type":"array","items":{"type":"string"}}},"required":["total"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"total": 2, "titles": []string{"a", "b"}}}, nil
		})
	reg, _ := demoNamespace(t, d, mcpclient.Server{Allow: []string{"search-issues"}})
	stubs := reg.Stubs()
	assert.Contains(t, stubs, "from typing import Any, Literal, NotRequired, TypedDict\n")
	assert.Contains(t, stubs, `_search_issues_filter = TypedDict("_search_issues_filter", {"labels": NotRequired[list[str]], "state": Literal['open', 'closed']})`)
	assert.Contains(t, stubs, "async def search_issues(self, query: str, filter: _search_issues_filter | None = None, limit: int | None = None) -> _search_issues_result:")

	c, err := typecheck.Default(context.Background())
	require.NoError(t, err)
	check := func(code string) *typecheck.Result {
		t.Helper()
		res, err := c.Check(context.Background(), typecheck.Request{Code: code, Stubs: stubs, Format: typecheck.Concise})
		require.NoError(t, err)
		return res
	}
	res := check("r = await demo.search_issues('bug', filter={'state': 'open', 'labels': ['ui']})\nprint(r['total'] + 1, r.get('titles'))\n")
	assert.True(t, res.Clean(), res.Text)
	for code, rule := range map[string]string{
		"await demo.search_issues(querry='bug')\n":                    "missing-argument",
		"await demo.search_issues('bug', filter={'state': 'opne'})\n": "invalid-argument-type",
		"await demo.search_issues('bug', filter={'stat': 'open'})\n":  "invalid-argument-type",
		"r = await demo.search_issues('bug')\nr['total'].upper()\n":   "unresolved-attribute",
		"await demo.search_issues('bug', limit='ten')\n":              "invalid-argument-type",
		"await demo.nope()\n": "unresolved-attribute",
	} {
		res := check(code)
		require.NotEmpty(t, res.Diagnostics, code)
		assert.Equal(t, rule, res.Diagnostics[0].Rule, "%s: %s", code, res.Text)
	}
	// And the call runs.
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	assert.Equal(t, "2 ['a', 'b']", agenttest.OK(t, e, "t", "r = await demo.search_issues('bug', filter={'state': 'open'})\nprint(r['total'], r['titles'])"))
}

// A destructive tool (or one the operator lists in Approve) does not run
// when the code calls it: the run pauses, stored, and the pause lists the
// call for a person. Approved (here by an executor over the same store, as
// another process would), the real call is made and the code goes on with
// its result; refused, the call raises PermissionError in the code. A
// value cannot stand for an approval, nor an approval for a value.
func TestMCPApprovals(t *testing.T) {
	d := newDemoServer(t)
	var dropped atomic.Int32
	destructive := true
	d.srv.AddTool(&mcp.Tool{Name: "drop-table", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			dropped.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dropped"}}}, nil
		})
	st := memstore.New(memstore.Options{})
	newExec := func() *agent.Executor {
		reg, _ := demoNamespace(t, d, mcpclient.Server{Approve: []string{"echo"}})
		return agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, Session: session.Options{Store: st}})
	}
	e := newExec()
	code := `import asyncio
r = await demo.drop_table(name="users")
try:
    await demo.echo(message="after")
except PermissionError as err:
    r = r + " / refused: " + str(err)
print(r)`
	res := agenttest.Execute(t, e, "t", code)
	require.NotNil(t, res.Paused, res.Text)
	require.Len(t, res.Paused.Calls, 1)
	c := res.Paused.Calls[0]
	assert.Equal(t, "demo.drop_table", c.Name)
	assert.True(t, c.Approval)
	assert.Contains(t, res.Text, `demo.drop_table(name='users') (needs a person's approval: ask them)`)
	assert.Equal(t, int32(0), dropped.Load(), "nothing runs before the approval")
	assert.Contains(t, e.Tool().Description, "async def demo.drop_table(name: str) -> Any: ... [waits for a person's approval]")
	assert.Contains(t, agenttest.OK(t, e, "h", "help('demo.drop_table')"), "Each call waits for a person's approval")

	resume := func(e *agent.Executor, runID, results string) (*agent.Result, error) {
		return e.Resume(context.Background(), "t", json.RawMessage(`{"run_id": "`+runID+`", "results": `+results+`}`))
	}
	_, err := resume(e, res.RunID, `[{"id": "`+c.ID+`", "value": "dropped"}]`)
	require.ErrorIs(t, err, agent.ErrBadArgs)
	assert.Contains(t, err.Error(), "needs a person's approval")
	assert.Equal(t, int32(0), dropped.Load(), "a value does not stand for the call")

	// A process without the server cannot make the call.
	bare := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	_, err = resume(bare, res.RunID, `[{"id": "`+c.ID+`", "approve": true}]`)
	require.ErrorIs(t, err, agent.ErrBadArgs)
	assert.Contains(t, err.Error(), "resume the run where the same MCP servers are connected")
	assert.Equal(t, int32(0), dropped.Load())

	// Another executor (another process) approves: the call is made there.
	e2 := newExec()
	res, err = resume(e2, res.RunID, `[{"id": "`+c.ID+`", "approve": true}]`)
	require.NoError(t, err)
	assert.Equal(t, int32(1), dropped.Load())
	require.NotNil(t, res.Paused, res.Text) // then echo, listed in Approve
	c = res.Paused.Calls[0]
	assert.Equal(t, "demo.echo", c.Name)
	_, err = resume(e2, res.RunID, `[{"id": "`+c.ID+`", "approve": true, "value": 1}, {"id": "99", "approve": true}]`)
	require.ErrorIs(t, err, agent.ErrBadArgs)
	res, err = resume(e2, res.RunID, `[{"id": "`+c.ID+`", "approve": false}]`)
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)
	assert.Equal(t, "dropped / refused: demo.echo was not approved: a person refused the call", strings.TrimSpace(res.Output))

	// A call that does not wait for approval cannot be approved.
	res, err = e2.Execute(context.Background(), "t", json.RawMessage(`{"code": "x = ask()", "client_tools": [{"name": "ask"}]}`))
	require.NoError(t, err)
	require.NotNil(t, res.Paused, res.Text)
	_, err = resume(e2, res.RunID, `[{"id": "0", "approve": true}]`)
	assert.ErrorIs(t, err, agent.ErrBadArgs)
}

// A tools/list_changed that arrives while Add lists the tools, from a
// server whose listing Add then refuses: Add fails at once. (It used to
// close the session while holding the lock the notification's handler
// waited for, and hung.)
func TestAddRefusedWhileToolsChange(t *testing.T) {
	d := newDemoServer(t)
	var once sync.Once
	d.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				once.Do(func() {
					// A tool whose Python name clashes, announced before
					// the listing answers (the server sends list_changed
					// 10 ms after a change).
					d.srv.AddTool(&mcp.Tool{Name: "get_sum", InputSchema: json.RawMessage(`{"type":"object"}`)},
						func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
					time.Sleep(100 * time.Millisecond)
				})
			}
			return next(ctx, method, req)
		}
	})
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "demo", Transport: d.transport(t)})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, mcpclient.ErrServer)
		assert.Contains(t, err.Error(), "both get_sum in Python")
	case <-time.After(30 * time.Second):
		t.Fatal("Add did not return: closing the session waits for a handler that waits for Add")
	}
	assert.False(t, reg.Taken("demo"), "a refused server leaves no namespace")
}

// fixedIDs is an Observer that gives every call the same id, as an
// Observer of another's making may, and keeps the progress messages.
type fixedIDs struct {
	mu       sync.Mutex
	messages []string
	got      chan<- struct{} // told of each message, when set
}

func (o *fixedIDs) CallStarted(string, string) string { return "call-1" }
func (o *fixedIDs) CallProgress(_ string, _, _ float64, message string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.messages = append(o.messages, message)
	if o.got != nil {
		o.got <- struct{}{}
	}
}
func (o *fixedIDs) CallLog(string, string, string)           {}
func (o *fixedIDs) CallFinished(string, object.Value, error) {}
func (o *fixedIDs) Print(runtime.Stream, string)             {}

// Two runs whose Observers give their calls the same id, under way at
// once on one namespace: each run gets its own call's progress.
func TestProgressOfConcurrentRuns(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "1"}, nil)
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	// A notification may be handled after the result it preceded: the
	// tool answers once its progress reached an observer (or after a
	// while, when it never does, which the assertions below catch).
	delivered := make(chan struct{}, 2)
	type tagIn struct {
		Tag string `json:"tag"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "gate", Description: "Wait for the other call, then report progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
			arrived <- struct{}{}
			<-release // both calls are under way
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 1, Message: in.Tag})
			select {
			case <-delivered:
			case <-time.After(5 * time.Second):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Tag}}}, nil, err
		})
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "g", Transport: func() (mcp.Transport, error) {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })

	observers := map[string]*fixedIDs{"a": {got: delivered}, "b": {got: delivered}}
	errs := make(chan error, 2)
	for tag, obs := range observers {
		s := agenttest.OpenSession(t, reg)
		go func() {
			res, err := s.Exec(tools.WithObserver(context.Background(), obs), fmt.Sprintf("await g.gate(tag=%q)", tag))
			if err == nil && res.Err != nil {
				err = res.Err
			}
			errs <- err
		}()
	}
	<-arrived
	<-arrived
	close(release)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	for tag, obs := range observers {
		assert.Equal(t, []string{tag}, obs.messages, "run %s", tag)
	}
}
