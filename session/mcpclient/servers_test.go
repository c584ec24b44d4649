package mcpclient_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
	"github.com/monty-go/monty/session/tools"
)

// command is a mcpclient.Server.Transport that starts argv.
func command(argv []string) func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		return &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil
	}
}

// TestMCPReferenceServers: the reference "everything" server (npm) and
// mcp-server-time (PyPI), started as processes, are namespaces of one
// registry; one snippet gathers calls to both and computes on their
// results, reads structured output, text, content blocks and progress,
// and catches a tool's error.
func TestMCPReferenceServers(t *testing.T) {
	ctx := context.Background()
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	for name, argv := range map[string][]string{"everything": mcptest.Everything(t), "clock": mcptest.Time(t)} {
		ns, err := mcpclient.Add(ctx, reg, mcpclient.Server{Name: name, Transport: command(argv)})
		require.NoError(t, err, name)
		t.Cleanup(func() { _ = ns.Close() })
	}
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	var progress int
	res, err := e.ExecuteEvents(ctx, "t", agenttest.CodeArgs(`import asyncio
weather, now, echo, total = await asyncio.gather(
    everything.get_structured_content(location="Chicago"),
    clock.get_current_time(timezone="UTC"),
    everything.echo(message="hi"),
    everything.get_sum(a=2, b=3.5),
)
done = await everything.trigger_long_running_operation(duration=0.4, steps=4)
try:
    await clock.get_current_time(timezone="Mars/Base")
except RuntimeError as err:
    failed = str(err)
print(weather["humidity"] > 0, now["timezone"], now["datetime"][:4].isdigit(), echo, total, done.startswith("Long running operation completed"))
print(failed)`), func(ev agent.Event) {
		if ev.Type == agent.ToolCallProgress {
			progress++
		}
	})
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)
	lines := strings.Split(res.Output, "\n")
	assert.Equal(t, "True UTC True Echo: hi The sum of 2 and 3.5 is 5.5. True", lines[0])
	assert.Contains(t, lines[1], "clock.get_current_time failed: ")
	assert.Contains(t, lines[1], "Mars/Base")
	// Progress notifications every 0.1 s; the last may overtake the result.
	assert.GreaterOrEqual(t, progress, 3)

	// Content blocks other than text come back as dicts.
	out := agenttest.OK(t, e, "t", `img = await everything.get_tiny_image()
print([b["type"] if isinstance(b, dict) else "text" for b in img], img[1]["mime_type"], img[1]["data"][:4])`)
	assert.Equal(t, `['text', 'image', 'text'] image/png b'\x89PNG'`, out)
}

// The same server over streamable HTTP.
func TestMCPReferenceServerHTTP(t *testing.T) {
	url := mcptest.StartEverythingHTTP(t)
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "everything", Transport: func() (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: url}, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	assert.Equal(t, "'Echo: over http'", agenttest.OK(t, e, "t", `await everything.echo(message="over http")`))
}

// TestReferenceServerToolNames: with the reference "everything" server,
// Approve takes get-sum (its MCP name) or get_sum (the name the code
// calls), gating the same tool either way; a name of no tool refuses the
// server, saying what it could have meant; Allow and Deny take either
// name too.
func TestReferenceServerToolNames(t *testing.T) {
	argv := mcptest.Everything(t)
	add := func(srv mcpclient.Server) (*tools.Registry, *mcpclient.Namespace, error) {
		reg, err := tools.NewRegistry()
		require.NoError(t, err)
		srv.Name, srv.Transport = "ev", command(argv)
		ns, err := mcpclient.Add(context.Background(), reg, srv)
		if err == nil {
			t.Cleanup(func() { _ = ns.Close() })
		}
		return reg, ns, err
	}
	for _, name := range []string{"get-sum", "get_sum"} {
		reg, _, err := add(mcpclient.Server{Approve: []string{name}})
		require.NoError(t, err, name)
		e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
		res := agenttest.Execute(t, e, "paused", "await ev.get_sum(a=1, b=2)")
		require.NotNil(t, res.Paused, "--approve %s: %s", name, res.Text)
		assert.True(t, res.Paused.Calls[0].Approval)
		assert.Equal(t, "ev.get_sum", res.Paused.Calls[0].Name)
		assert.Equal(t, "'Echo: not gated'", agenttest.OK(t, e, "t", "await ev.echo(message='not gated')"))

		_, ns, err := add(mcpclient.Server{Allow: []string{name, "echo"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"echo", "get_sum"}, ns.Tools())
		_, ns, err = add(mcpclient.Server{Deny: []string{name}})
		require.NoError(t, err)
		assert.NotContains(t, ns.Tools(), "get_sum")
		assert.Contains(t, ns.Tools(), "echo")
	}

	_, _, err := add(mcpclient.Server{Approve: []string{"get_summ", "no_such_tool"}, Deny: []string{"Get-Env"}})
	require.ErrorIs(t, err, mcpclient.ErrUnknownTool)
	require.ErrorIs(t, err, mcpclient.ErrServer)
	msg := err.Error()
	assert.Contains(t, msg, `mcpclient: MCP server ev: Deny: the MCP server ev has no tool "Get-Env"; did you mean get_env (MCP name get-env)?`)
	assert.Contains(t, msg, `mcpclient: MCP server ev: Approve: the MCP server ev has no tool "get_summ"; did you mean get_sum (MCP name get-sum)?`)
	assert.Contains(t, msg, `mcpclient: MCP server ev: Approve: the MCP server ev has no tool "no_such_tool"; its tools are echo, get_annotated_message (MCP name get-annotated-message), `)
	var u *mcpclient.UnknownToolError
	require.ErrorAs(t, err, &u)
	assert.Contains(t, u.Tools, "get-sum")
}

// TestIntegersReachServersExactly: JSON carries integers exactly, and the
// code's integers go to MCP tools so, however far past a float's 53 bits,
// nested or not: a server on the official Python SDK reads them as the
// ints they were. Where a tool's schema says number, the server converts
// as its schema asks (the Python server to float, the JavaScript reference
// server, like every JavaScript JSON reader, to a double); where it says
// string, the call is refused before it is sent.
func TestIntegersReachServersExactly(t *testing.T) {
	ctx := context.Background()
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	for name, argv := range map[string][]string{"py": mcptest.PythonEcho(t), "everything": mcptest.Everything(t)} {
		ns, err := mcpclient.Add(ctx, reg, mcpclient.Server{Name: name, Transport: command(argv)})
		require.NoError(t, err, name)
		t.Cleanup(func() { _ = ns.Close() })
	}
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	out := agenttest.OK(t, e, "t", `for r in [
    await py.echo(x=2**200),
    await py.echo(x=-(2**64) - 1),
    await py.echo(x={"n": [2**70, 2**53 + 1], "f": 0.5}),
    await py.as_float(x=2**200),
    await everything.get_sum(a=2**53 + 1, b=0),
]:
    print(r["result"] if isinstance(r, dict) else r)  # the Python SDK's structured result
try:
    await everything.echo(message=2**200)
except TypeError as e:
    print(e)`)
	assert.Equal(t, strings.Join([]string{
		"int 1606938044258990275541962092341162602522202993782792835301376",
		"int -18446744073709551617",
		"dict {'n': [1180591620717411303424, 9007199254740993], 'f': 0.5}",
		"float 1.6069380442589903e+60",
		"The sum of 9007199254740992 and 0 is 9007199254740992.",
		"everything.echo() argument 'message' must be str, not int",
	}, "\n"), out)
}
