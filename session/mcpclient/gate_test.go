package mcpclient_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/tools"
)

// TestUnknownToolNames: a name in Allow, Deny or Approve that is no tool
// of the server, by either spelling, fails Add with one UnknownToolError
// per name, naming the server, the list, the name and what it could have
// meant; the registry is left without the namespace.
func TestUnknownToolNames(t *testing.T) {
	d := newDemoServer(t)
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	long := strings.Repeat("x", 10_000)
	_, err = mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "demo", Transport: d.transport(t),
		Allow:   []string{"get_sum", "ECHO"},
		Deny:    []string{"fial"},
		Approve: []string{"get-sum", "getsum", "nothing_like_it", "", "a\"b\n<script>", long}})
	require.ErrorIs(t, err, mcpclient.ErrUnknownTool)
	require.ErrorIs(t, err, mcpclient.ErrServer)
	assert.False(t, reg.Taken("demo"), "a refused server leaves no namespace")

	var unknown []*mcpclient.UnknownToolError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var u *mcpclient.UnknownToolError
		require.ErrorAs(t, e, &u)
		unknown = append(unknown, u)
	}
	got := map[string]*mcpclient.UnknownToolError{}
	for _, u := range unknown {
		assert.Equal(t, "demo", u.Server)
		assert.Equal(t, []string{"block", "chatty", "echo", "fail", "get-sum", "picture", "steps"}, u.Tools)
		got[u.List+" "+u.Name] = u
	}
	require.Len(t, got, 7, "ECHO, fial, getsum, nothing_like_it, the empty name, the hostile one and the long one: %v", err)

	echo := got["Allow ECHO"]
	require.NotNil(t, echo, "a name is matched exactly: case counts")
	assert.Equal(t, []string{"echo"}, echo.Suggestions)
	assert.Equal(t, `mcpclient: MCP server demo: Allow: the MCP server demo has no tool "ECHO"; did you mean echo? (name a tool by its MCP name or its Python name)`, echo.Error())

	assert.Equal(t, []string{"fail"}, got["Deny fial"].Suggestions)
	getsum := got["Approve getsum"]
	assert.Equal(t, []string{"get-sum"}, getsum.Suggestions)
	assert.Contains(t, getsum.Reason(), `no tool "getsum"; did you mean get_sum (MCP name get-sum)?`)

	none := got["Approve nothing_like_it"]
	assert.Empty(t, none.Suggestions)
	assert.Contains(t, none.Reason(), "; its tools are block, chatty, echo, fail, get_sum (MCP name get-sum), picture, steps (name a tool")

	assert.Contains(t, got["Approve "].Reason(), `has no tool ""`)
	hostile := got["Approve a\"b\n<script>"]
	require.NotNil(t, hostile)
	assert.Contains(t, hostile.Reason(), `has no tool "a\"b\n<script>"`, "quoted: one line")
	assert.NotContains(t, hostile.Error(), "\n")
	huge := got["Approve "+long]
	require.NotNil(t, huge)
	assert.Empty(t, huge.Suggestions)
	assert.Less(t, len(huge.Error()), 500, "a long name is clipped")
	assert.Contains(t, huge.Error(), strings.Repeat("x", 80)+"…")

	// Every line of the joined error is one name.
	assert.Len(t, strings.Split(err.Error(), "\n"), 7)
}

// TestToolNamesBothSpellings: Allow, Deny and Approve take a tool's MCP
// name or its Python name, meaning the same tool.
func TestToolNamesBothSpellings(t *testing.T) {
	d := newDemoServer(t)
	for _, name := range []string{"get-sum", "get_sum"} {
		reg, ns := demoNamespace(t, d, mcpclient.Server{Allow: []string{name, "echo"}, Approve: []string{name}})
		assert.Equal(t, []string{"echo", "get_sum"}, ns.Tools(), name)
		e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
		res := agenttest.Execute(t, e, "paused", "await demo.get_sum(a=1, b=2)")
		require.NotNil(t, res.Paused, "Approve %s: %s", name, res.Text)
		assert.True(t, res.Paused.Calls[0].Approval)
		assert.Equal(t, "demo.get_sum", res.Paused.Calls[0].Name)
		assert.Equal(t, "'hi/<nil>'", agenttest.OK(t, e, "t", "await demo.echo(message='hi')"), "echo is not gated")

		_, ns = demoNamespace(t, d, mcpclient.Server{Deny: []string{name}})
		assert.NotContains(t, ns.Tools(), "get_sum", "Deny %s", name)
	}
	// When one tool's MCP name is another's Python name, the name means
	// both: approving it gates whichever the code calls get_sum, and the
	// MCP name picks one.
	d.srv.AddTool(&mcp.Tool{Name: "get_sum", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "underscored"}}}, nil
		})
	reg0, err := tools.NewRegistry()
	require.NoError(t, err)
	_, err = mcpclient.Add(context.Background(), reg0, mcpclient.Server{Name: "demo", Transport: d.transport(t), Allow: []string{"get_sum"}})
	require.ErrorIs(t, err, mcpclient.ErrServer)
	assert.Contains(t, err.Error(), `tools "get-sum" and "get_sum" are both get_sum in Python; leave one out with a filter`)
	reg, _ := demoNamespace(t, d, mcpclient.Server{Deny: []string{"get-sum"}, Approve: []string{"get_sum"}})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	res := agenttest.Execute(t, e, "paused", "await demo.get_sum()")
	require.NotNil(t, res.Paused, res.Text)
	reg, _ = demoNamespace(t, d, mcpclient.Server{Allow: []string{"get_sum"}, Deny: []string{"get-sum"}})
	e = agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	assert.Equal(t, "'underscored'", agenttest.OK(t, e, "t", "await demo.get_sum()"))
}

// records is a slog.Handler that sends every record to a channel.
type records chan slog.Record

func (r records) Enabled(context.Context, slog.Level) bool        { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error { r <- rec.Clone(); return nil }
func (r records) WithAttrs([]slog.Attr) slog.Handler              { return r }
func (r records) WithGroup(string) slog.Handler                   { return r }

// next waits for the next record whose message is msg, keeping the
// warnings met on the way, and returns them.
func (r records) next(t *testing.T, msg string) (warnings []slog.Record) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case rec := <-r:
			if rec.Level == slog.LevelWarn {
				warnings = append(warnings, rec)
			}
			if rec.Message == msg {
				return warnings
			}
		case <-timeout:
			t.Fatalf("no %q logged within 30 s", msg)
		}
	}
}

// attrs are a record's attributes as strings.
func attrs(rec slog.Record) map[string]string {
	out := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		out[a.Key] = a.Value.String()
		return true
	})
	return out
}

// TestApproveFollowsToolsChanged: over streamable HTTP, with a server of
// the Go SDK whose tools change, a tool listed in Approve (here by its
// Python name) stays gated whenever tools/list_changed lists it again:
// after another tool comes, after it leaves and comes back, and when a
// tool of another MCP name with the same Python name takes its place.
// While it is gone, the refresh logs a warning and the namespace goes on.
func TestApproveFollowsToolsChanged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	type sumIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	addSum := func(name string) {
		mcp.AddTool(srv, &mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	}
	addSum("get-sum")
	addSum("echo")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	logs := make(records, 1000)
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "demo", Approve: []string{"get_sum"}, Logger: slog.New(logs),
		Transport: func() (mcp.Transport, error) { return &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	gated := func(step string) {
		t.Helper()
		res := agenttest.Execute(t, e, strings.ReplaceAll(step, " ", "-"), "await demo.get_sum(a=1, b=2)") // a session per pause
		require.NotNil(t, res.Paused, "%s: %s", step, res.Text)
		require.Len(t, res.Paused.Calls, 1)
		assert.True(t, res.Paused.Calls[0].Approval, step)
		assert.Equal(t, "'echo'", agenttest.OK(t, e, "t", "await demo.echo(a=1, b=2)"), "%s: echo is not gated", step)
	}
	const changed = "mcp server tools changed"
	gated("at Add")

	addSum("other")
	assert.Empty(t, logs.next(t, changed))
	assert.Equal(t, []string{"echo", "get_sum", "other"}, ns.Tools())
	gated("after another tool came")

	srv.RemoveTools("get-sum")
	warnings := logs.next(t, changed)
	require.Len(t, warnings, 1, "the name that is no longer a tool is told")
	assert.Equal(t, map[string]string{"server": "demo", "list": "Approve", "tool": "get_sum", "suggestions": "[]"}, attrs(warnings[0]))
	assert.Contains(t, warnings[0].Message, "Approve is no longer a tool of the server")
	assert.Equal(t, []string{"echo", "other"}, ns.Tools(), "the namespace goes on")
	assert.Contains(t, agenttest.Execute(t, e, "t", "await demo.get_sum(a=1, b=2)").Text, "AttributeError")

	addSum("get-sum")
	assert.Empty(t, logs.next(t, changed))
	gated("after it came back")

	srv.RemoveTools("get-sum")
	logs.next(t, changed)
	addSum("get_sum")
	assert.Empty(t, logs.next(t, changed))
	assert.Equal(t, []string{"echo", "get_sum", "other"}, ns.Tools())
	gated("under another MCP name with the same Python name")
}
