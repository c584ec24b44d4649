package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
)

// TestMaxOutputFlag: a script that writes a 2.1 MB CSV to stdout stops at
// the default 1 MiB of output with the output limit error (exit 1); with
// --max-output 4MiB every byte is printed, by -c and by FILE.
func TestMaxOutputFlag(t *testing.T) {
	const script = `print("id,name,score\n" * 150_000, end="")`
	want := strings.Repeat("id,name,score\n", 150_000)
	code, out, errOut := monty(t, "-c", script)
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "MemoryError: print output limit exceeded")
	assert.Len(t, out, 1<<20, "the output up to the limit")

	file := filepath.Join(t.TempDir(), "csv.py")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o600))
	for _, args := range [][]string{{"--max-output", "4MiB", "-c", script}, {"--max-output", "4MiB", file}} {
		code, out, errOut = monty(t, args...)
		require.Equal(t, cli.ExitOK, code, errOut)
		assert.Empty(t, errOut)
		assert.True(t, out == want, "%q printed %d bytes, want %d", args[2:], len(out), len(want))
	}
}

type limitCase struct{ flag, value, code, want string }

// limitCases are, for each limit flag, code that runs under every
// command's defaults, and a value of the flag below what it needs, with
// the error the code then fails with. --max-duration is first (see
// TestMCPLimitFlags).
var limitCases = []limitCase{
	{"--max-duration", "10ms", "import time\ntime.sleep(0.05)", "TimeoutError"},
	{"--max-memory", "4MiB", "x = 'a' * 8_000_000", "MemoryError: memory limit exceeded"},
	{"--max-output", "1KiB", "print('x' * 5000)", "MemoryError: print output limit exceeded"},
	{"--max-result", "1KiB", "'x' * 5000", "result size limit exceeded"},
	{"--max-recursion", "50", "def f(n):\n    return 0 if n == 0 else f(n - 1)\nf(100)", "RecursionError"},
	{"--max-int-bits", "1000", "x = 2 ** 2000", "OverflowError: integer result too large"},
	{"--max-host-calls", "3", "import os\nfor i in range(5):\n    try:\n        os.getenv('HOME')\n    except Exception:\n        pass", "host call limit exceeded"},
}

// TestLimitFlagsWired: each limit flag reaches the limits of a run (-c),
// of the REPL and of a session run: the code that runs under the defaults
// fails with that limit's error under a lower value.
func TestLimitFlagsWired(t *testing.T) {
	store := t.TempDir()
	for i, c := range limitCases {
		code, _, errOut := monty(t, "-c", c.code)
		require.Equal(t, cli.ExitOK, code, "%s under the defaults: %s", c.code, errOut)

		code, _, errOut = monty(t, c.flag, c.value, "-c", c.code)
		assert.Equal(t, cli.ExitException, code, "%s %s", c.flag, c.value)
		assert.Contains(t, errOut, c.want, "%s %s", c.flag, c.value)

		code, _, errOut = montyIn(t, c.code+"\n\n", c.flag, c.value)
		assert.Equal(t, cli.ExitOK, code, "the REPL goes on after a limit")
		assert.Contains(t, errOut, c.want, "REPL %s %s", c.flag, c.value)

		code, _, errOut = monty(t, "--store", store, "--session", "s"+string(rune('a'+i)), c.flag, c.value, "-c", c.code)
		assert.Equal(t, cli.ExitException, code, "session %s %s", c.flag, c.value)
		assert.Contains(t, errOut, c.want, "session %s %s", c.flag, c.value)
	}
}

// TestMCPLimitFlags: monty mcp takes the same limit flags: each makes
// execute_python fail with its limit's error, where the server's defaults
// run the code. (One server has all but --max-duration, which would stop
// the other cases too; mcp_test.go's TestMCPConversation covers --timeout,
// the other name of --max-duration.)
func TestMCPLimitFlags(t *testing.T) {
	cs := mcpSession(t)
	for _, c := range limitCases {
		text, isErr := callTool(t, cs, c.code)
		assert.False(t, isErr, "%s under the defaults: %s", c.code, text)
	}
	failsWith := func(cs *mcp.ClientSession, c limitCase) {
		text, isErr := callTool(t, cs, c.code)
		assert.True(t, isErr, "%s %s", c.flag, c.value)
		assert.Contains(t, text, c.want, "%s %s", c.flag, c.value)
	}
	duration, rest := limitCases[0], limitCases[1:]
	failsWith(mcpSession(t, duration.flag, duration.value), duration)
	var low []string
	for _, c := range rest {
		low = append(low, c.flag, c.value)
	}
	cs = mcpSession(t, low...)
	for _, c := range rest {
		failsWith(cs, c)
	}
}

// mcpSession runs `monty mcp --store mem: args...` in this process on
// pipes and connects a client to it.
func mcpSession(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := cli.Run(context.Background(), append([]string{"mcp", "--store", "mem:", "--log-level", "error"}, args...), inR, outW, &stderr)
		outW.Close()
		done <- code
	}()
	t.Cleanup(func() {
		inW.Close() // the end of input ends the server
		if code := <-done; code != cli.ExitOK {
			t.Errorf("monty mcp %q: exit %d: %s", args, code, stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "limits-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool runs code with execute_python and returns the result's text and
// whether it is a tool error.
func callTool(t *testing.T, cs *mcp.ClientSession, code string) (string, bool) {
	t.Helper()
	return callToolArgs(t, cs, map[string]any{"code": code})
}

// TestLimitFlagErrors: a limit flag with a value that is not one exits 2
// naming the flag, on every command that has it.
func TestLimitFlagErrors(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "a-signing-key-long-enough") // serve's
	serve := []string{"serve", "--store", "mem:"}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--max-output", "lots"}, "--max-output"},
		{[]string{"--max-output", "-1"}, "--max-output"},
		{[]string{"--max-result", "1e30"}, "--max-result"},
		{[]string{"--max-memory", "2000000GiB"}, "--max-memory"},
		{[]string{"--max-recursion", "-1"}, "--max-recursion"},
		{[]string{"--max-int-bits", "-1"}, "--max-int-bits"},
		{[]string{"--max-host-calls", "-1"}, "--max-host-calls"},
		{[]string{"--max-duration", "-1s"}, "--max-duration"},
		{[]string{"mcp", "--max-output", "0"}, "--max-output"},
		{[]string{"mcp", "--max-result", "2GiB"}, "--max-result"},
		{[]string{"mcp", "--max-int-bits", "-1"}, "--max-int-bits"},
		{[]string{"mcp", "--max-host-calls", "-5"}, "--max-host-calls"},
		{append(serve, "--max-output", "0"), "--max-output"},
		{append(serve, "--max-int-bits", "-1"), "--max-int-bits"},
	} {
		code, _, errOut := monty(t, c.args...)
		assert.Equal(t, cli.ExitUsage, code, "%q: %s", c.args, errOut)
		assert.Contains(t, errOut, ": "+c.flag, "%q names the flag", c.args)
	}
}

// TestLimitFlagsHelp: every command that runs code lists each limit flag
// with its default.
func TestLimitFlagsHelp(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want []string
	}{
		{nil, []string{"-max-duration duration", "(default 0: no limit)", `-max-output SIZE`, `(default "1MiB")`, `(default "64MiB")`,
			"-max-recursion int", "(default 1000)", "-max-int-bits int", "(default 2097152)", "-max-host-calls int"}},
		{[]string{"mcp"}, []string{"(default 5s)", `(default "16MiB")`, `(default "1MiB")`, "-max-int-bits int", "-max-host-calls int", "-timeout DURATION"}},
		{[]string{"serve"}, []string{"(default 30s)", `(default "256MiB")`, `(default "16MiB")`, "-max-int-bits int", "[MONTY_MAX_INT_BITS]"}},
	} {
		code, _, errOut := monty(t, append(c.cmd, "-h")...)
		require.Equal(t, cli.ExitOK, code)
		for _, w := range c.want {
			assert.Contains(t, errOut, w, "%q -h", c.cmd)
		}
	}
}
