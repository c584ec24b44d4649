package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// TestConnectUsageErrors: every command refuses connect flags that are
// wrong with exit status 2 and a message saying what to write, before it
// starts anything.
func TestConnectUsageErrors(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "connect-usage-signing-key-0123456789")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--connect", "2fa=server"}, `--connect 2fa=server: NAME "2fa" is not a Python identifier (letters, digits and _, not starting with _ or a digit, not a keyword), like tool_2fa`},
		{[]string{"--connect", "my-server=server"}, `like my_server`},
		{[]string{"--connect", "class=server"}, `NAME "class" is not a Python identifier`},
		{[]string{"--connect", "_x=server"}, `NAME "_x" is not a Python identifier`},
		{[]string{"--connect", "help=server"}, `NAME help is taken by the built-in help(): choose another`},
		{[]string{"--connect", "server --stdio"}, `want NAME=COMMAND [ARGS...] or NAME=URL`},
		{[]string{"--connect", "a=sh", "--connect", "a=sh"}, `two servers are named a: give each its own NAME`},
		{[]string{"--connect", "a=sh -c 'exit 0"}, `--connect a: the ' at byte 7 is never closed: close it, or write \' for a quote`},
		{[]string{"--connect", "a=server $TOKEN"}, `--connect a: $ would be replaced by a variable`},
		{[]string{"--connect", "a="}, `--connect a: there is no command`},
		{[]string{"--connect", "a=http://"}, `--connect a: "http://" is not an http:// or https:// URL with a host`},
		{[]string{"--connect", "a=no-such-mcp-server-here"}, `--connect a: exec: "no-such-mcp-server-here": executable file not found in $PATH: give the command's path, or install it`},
		{[]string{"--connect", "a=sh", "--connect-allow", "b=tool"}, `--connect-allow b=tool: no --connect server is named b (the servers are a)`},
		{[]string{"--connect-deny", "b=tool"}, `no --connect server is named b (there is no --connect)`},
		{[]string{"--connect", "a=sh", "--approve", "b=tool"}, `--approve b=tool: no --connect server is named b (the servers are a)`},
		{[]string{"--connect", "a=sh", "--approve", "a="}, `--approve a=: name the tools, like a=tool,other-tool`},
		{[]string{"--connect", "a=sh", "--connect-allow", "a=, ,"}, `--connect-allow a=, ,: name the tools, like a=tool,other-tool`},
		{[]string{"--connect", "a=sh", "--connect-allow", "tool"}, `--connect-allow "tool": want NAME=…`},
		{[]string{"--connect", "a=sh", "--connect-header", "a=X-Key: 1"}, `a is a stdio server; headers go to HTTP servers`},
		{[]string{"--connect", "a=https://example.com/mcp", "--connect-header", "a=X Key: 1"}, `--connect-header a=…: want NAME=Header: value, like a='Authorization: Bearer TOKEN'`},
		{[]string{"--connect", "a=https://example.com/mcp", "--connect-header", "a=no colon"}, `want NAME=Header: value`},
		{[]string{"--connect", "a=sh", "--connect-timeout", "0s"}, `--connect-timeout must be positive`},
	} {
		for _, command := range [][]string{{"-c", "1"}, {"mcp", "--store", "mem:"}, {"serve", "--store", "mem:", "--addr", "127.0.0.1:0"}} {
			args := append(command[:len(command):len(command)], c.args...)
			if command[0] == "-c" {
				args = append(c.args[:len(c.args):len(c.args)], command...)
			}
			code, _, errOut := monty(t, args...)
			assert.Equal(t, cli.ExitUsage, code, "%q: %s", args, errOut)
			assert.Contains(t, errOut, c.want, "%q", args)
		}
	}
}

// TestConnectREPL: in the REPL the code awaits a connected server's tools
// at top level, and keeps their results; the connections are not told on
// stderr unless it is a terminal.
func TestConnectREPL(t *testing.T) {
	connect := "time=" + strings.Join(mcptest.Time(t), " ")
	input := "r = await time.get_current_time(timezone='UTC')\nr['timezone'], sorted(r)\n"
	code, out, errOut := montyIn(t, input, "--connect", connect)
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Contains(t, out, "('UTC', ['datetime', 'day_of_week', 'is_dst', 'timezone'])\n")
	assert.Empty(t, errOut)
}

// TestConnectSession: a --session run calls a connected server, and its
// result is in the session's state for the next run.
func TestConnectSession(t *testing.T) {
	connect := "time=" + strings.Join(mcptest.Time(t), " ")
	dir := t.TempDir()
	code, _, errOut := monty(t, "--store", dir, "--session", "s", "--connect", connect, "-c", "now = await time.get_current_time(timezone='UTC')")
	require.Equal(t, cli.ExitOK, code, errOut)
	code, out, errOut := monty(t, "--store", dir, "--session", "s", "-c", "print(now['timezone'])")
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "UTC\n", out)
}

// TestConnectToolNames: --approve, --connect-allow and --connect-deny take
// a tool's MCP name (get-sum, as the reference "everything" server lists
// it) or its Python name (get_sum, as the code calls it), meaning the same
// tool: with either, monty -c does not make the gated call.
func TestConnectToolNames(t *testing.T) {
	connect := "ev=" + strings.Join(mcptest.Everything(t), " ")
	code, out, errOut := monty(t, "--connect", connect, "-c", "print(await ev.get_sum(a=1, b=2))")
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "The sum of 1 and 2 is 3.\n", out, "not gated without --approve")
	for _, name := range []string{"get-sum", "get_sum"} {
		code, out, errOut := monty(t, "--connect", connect, "--approve", "ev=echo,"+name, "-c", "print(await ev.get_sum(a=1, b=2))")
		assert.Equal(t, cli.ExitException, code, "--approve ev=%s: %s", name, errOut)
		assert.Empty(t, out, "--approve ev=%s: the call is not made", name)
		assert.Contains(t, errOut, "execution suspended at calls its caller answers (get_sum)", name)

		code, out, errOut = monty(t, "--connect", connect, "--connect-allow", "ev="+name, "--connect-deny", "ev=echo",
			"-c", "print(await ev.get_sum(a=1, b=2))\nawait ev.get_tiny_image()")
		assert.Equal(t, cli.ExitException, code, errOut)
		assert.Equal(t, "The sum of 1 and 2 is 3.\n", out, "--connect-allow ev=%s", name)
		assert.Contains(t, errOut, "AttributeError", "only get_sum is offered")

		code, _, errOut = monty(t, "--connect", connect, "--connect-deny", "ev="+name, "-c", "await ev.get_sum(a=1, b=2)")
		assert.Equal(t, cli.ExitException, code, errOut)
		assert.Contains(t, errOut, "AttributeError", "--connect-deny ev=%s", name)
	}
}

// TestConnectUnknownToolNames: a name in --approve, --connect-allow or
// --connect-deny that is no tool of its server refuses to start, with
// exit status 2 and a line per name saying what it could have meant, on
// every command that takes the flags: monty -c, the REPL, monty mcp and
// monty serve.
func TestConnectUnknownToolNames(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "connect-names-signing-key-0123456789")
	connect := "ev=" + strings.Join(mcptest.Everything(t), " ")
	flags := []string{"--connect", connect, "--approve", "ev=echo,no_such_tool", "--approve", "ev=get_summ,<b>\nbold",
		"--connect-allow", "ev=echo,get-sum,Get_Env", "--connect-deny", "ev=get-tiny-imag"}
	want := []string{
		`--connect-allow ev=Get_Env: the MCP server ev has no tool "Get_Env"; did you mean get_env (MCP name get-env)? (name a tool by its MCP name or its Python name)`,
		`--connect-deny ev=get-tiny-imag: the MCP server ev has no tool "get-tiny-imag"; did you mean get_tiny_image (MCP name get-tiny-image)?`,
		`--approve ev=no_such_tool: the MCP server ev has no tool "no_such_tool"; its tools are echo, get_annotated_message (MCP name get-annotated-message), get_env (MCP name get-env), `,
		`--approve ev=get_summ: the MCP server ev has no tool "get_summ"; did you mean get_sum (MCP name get-sum)?`,
		`--approve ev="<b>\nbold": the MCP server ev has no tool "<b>\nbold"; its tools are echo, `,
	}
	for _, command := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"run", append(flags[:len(flags):len(flags)], "-c", "print('ran')"), ""},
		{"repl", flags, "print('ran')\n"},
		{"mcp", append([]string{"mcp", "--store", "mem:"}, flags...), ""},
		{"serve", append([]string{"serve", "--store", "mem:", "--addr", "127.0.0.1:0"}, flags...), ""},
	} {
		code, out, errOut := montyIn(t, command.stdin, command.args...)
		assert.Equal(t, cli.ExitUsage, code, "%s: %s", command.name, errOut)
		assert.NotContains(t, out, "ran", command.name)
		for _, line := range want {
			assert.Contains(t, errOut, line, command.name)
		}
		// The server's tools/list_changed on the session refused is not
		// listed again, nor warned about.
		assert.NotContains(t, errOut, "list_changed", command.name)
	}
}

// TestConnectApproveMCP: monty mcp --approve with the tool's Python name
// pauses its call for a person's approval, as with its MCP name
// (cmd/monty's TestConnectApproval); approved, the call is made.
func TestConnectApproveMCP(t *testing.T) {
	cs := mcpSession(t, "--connect", "ev="+strings.Join(mcptest.Everything(t), " "), "--approve", "ev=get_sum")
	text, isError := callTool(t, cs, "await ev.get_sum(a=1, b=2)")
	require.False(t, isError, text)
	assert.Contains(t, text, "ev.get_sum(a=1, b=2) (needs a person's approval")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "await ev.get_sum(a=1, b=2)", "session_id": "other"}})
	require.NoError(t, err)
	var paused struct {
		RunID  string `json:"run_id"`
		Paused struct {
			Calls []struct {
				ID       string `json:"id"`
				Approval bool   `json:"approval"`
			} `json:"calls"`
		} `json:"paused"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &paused), string(raw))
	require.Len(t, paused.Paused.Calls, 1, string(raw))
	require.True(t, paused.Paused.Calls[0].Approval)
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "resume_python", Arguments: map[string]any{
		"run_id": paused.RunID, "session_id": "other", "results": []map[string]any{{"id": paused.Paused.Calls[0].ID, "approve": true}}}})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "The sum of 1 and 2 is 3.")
}
