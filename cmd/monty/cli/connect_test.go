package cli_test

import (
	"strings"
	"testing"

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
