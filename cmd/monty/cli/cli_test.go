package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
)

func monty(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return montyIn(t, "", args...)
}

func montyIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestInteractive(t *testing.T) {
	input := "x = 20\ndef f(a):\n    return a + 1\n\nf(x) * 2\nprint('hi')\n[1,\n 2]\n1/0\nx\nNone\n"
	code, out, errOut := montyIn(t, input)
	assert.Equal(t, cli.ExitOK, code)
	assert.Contains(t, out, "42\n")
	assert.Contains(t, out, "hi\n")
	assert.Contains(t, out, "[1, 2]\n")
	assert.Contains(t, out, "20\n", "state survives an exception")
	assert.Contains(t, out, "... ", "continuation prompt for blocks")
	assert.Contains(t, errOut, "ZeroDivisionError: division by zero")
	assert.NotContains(t, out, "None\n")

	// --session makes an interactive session resumable.
	dir := t.TempDir()
	_, _, errOut = montyIn(t, "y = 'remembered'\n", "--store", dir, "--session", "chat")
	require.Empty(t, errOut)
	_, out, _ = montyIn(t, "y\n", "--store", dir, "--session", "chat")
	assert.Contains(t, out, "'remembered'\n")
}

func TestRunCode(t *testing.T) {
	code, out, errOut := monty(t, "-c", "print(1 + 1)\n'final value is not printed'")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "2\n", out)
	assert.Empty(t, errOut)
}

func TestRunFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(path, []byte("import sys\nfor i in range(3):\n    print(i)\nprint('warn', file=sys.stderr)\n"), 0o644))
	code, out, errOut := monty(t, path)
	assert.Equal(t, cli.ExitOK, code)
	assert.Equal(t, "0\n1\n2\n", out)
	assert.Equal(t, "warn\n", errOut)
}

func TestUncaughtException(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boom.py")
	require.NoError(t, os.WriteFile(path, []byte("print('before')\ndef f():\n    raise ValueError('boom')\nf()\n"), 0o644))
	code, out, errOut := monty(t, path)
	assert.Equal(t, cli.ExitException, code)
	assert.Equal(t, "before\n", out)
	assert.Contains(t, errOut, "Traceback (most recent call last):")
	assert.Contains(t, errOut, `File "boom.py", line 4`)
	assert.Contains(t, errOut, "ValueError: boom")

	code, _, errOut = monty(t, "-c", "x = (")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "SyntaxError")
}

func TestLimitsFlags(t *testing.T) {
	code, _, errOut := monty(t, "--max-duration", "50ms", "-c", "while True:\n    pass")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "TimeoutError")

	code, _, errOut = monty(t, "--max-memory", "4MB", "-c", "x = []\nwhile True:\n    x.append('a' * 1000)")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "MemoryError")
}

// TestHostileLimits is issue 9's reproductions on the command line: each
// ends within twice its limit with the error Python would print.
func TestHostileLimits(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{"import time\nwhile True:\n    time.sleep(0.1)", "TimeoutError: time limit exceeded"},
		{"import time\ntime.sleep(30)", "TimeoutError: time limit exceeded: sleeping 30s would pass the limit of 1s"},
		{"x = 10**10**7", "OverflowError: integer result too large"},
		{"x = 1 << 30000000\ny = x * x", "OverflowError: integer result too large"},
	} {
		start := time.Now()
		code, _, errOut := monty(t, "--max-duration", "1s", "--max-memory", "64MB", "-c", c.code)
		assert.Less(t, time.Since(start), 3*time.Second, c.code)
		assert.Equal(t, cli.ExitException, code, c.code)
		assert.Contains(t, errOut, c.want, c.code)
	}
	// A limit the host enforces reads like a Python exception too.
	code, _, errOut := monty(t, "--max-memory", "64MB", "-c", "s = 'a' * 10**6\n[s] * 300")
	assert.Equal(t, cli.ExitException, code)
	assert.True(t, strings.HasPrefix(errOut, "MemoryError: result size limit exceeded"), errOut)
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-c", "1", "file.py"},
		{"a.py", "b.py"},
		{"--max-memory", "lots", "-c", "1"},
		{"--max-memory", "1e30", "-c", "1"},
		{"--max-memory", "NaN", "-c", "1"},
		{"--max-duration", "-1s", "-c", "1"},
		{"--no-such-flag"},
		{filepath.Join(t.TempDir(), "missing.py")},
	} {
		code, _, errOut := monty(t, args...)
		assert.Equal(t, cli.ExitUsage, code, "%q", args)
		assert.NotEmpty(t, errOut, "%q", args)
	}
}

func TestSessionAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := monty(t, "--store", dir, "--session", "work", "-c", "def greet(n):\n    return 'hi ' + n\ncount = 1")
	require.Equal(t, cli.ExitOK, code, errOut)
	code, out, errOut := monty(t, "--store", dir, "--session", "work", "-c", "count += 1\nprint(greet('again'), count)")
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "hi again 2\n", out)

	// A failing call leaves the session as it was.
	code, _, _ = monty(t, "--store", dir, "--session", "work", "-c", "count = 100\nraise ValueError('no')")
	assert.Equal(t, cli.ExitException, code)
	_, out, _ = monty(t, "--store", dir, "--session", "work", "-c", "print(count)")
	assert.Equal(t, "2\n", out)

	code, _, errOut = monty(t, "--store", dir, "--session", "../escape", "-c", "1")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, "invalid session id")
}

func TestSessionCommands(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := monty(t, "--store", dir, "--session", "one", "-c", "nums = [1, 2]\ndef f(): pass")
	require.Equal(t, cli.ExitOK, code, errOut)

	code, out, _ := monty(t, "session", "--store", dir, "ls")
	require.Equal(t, cli.ExitOK, code)
	assert.Contains(t, out, "one")

	code, out, _ = monty(t, "session", "--store", dir, "show", "one")
	require.Equal(t, cli.ExitOK, code)
	assert.Contains(t, out, "globals:  nums, f")
	assert.Contains(t, out, `"nums": [`)

	file := filepath.Join(t.TempDir(), "one.state")
	code, _, _ = monty(t, "session", "--store", dir, "export", "one", file)
	require.Equal(t, cli.ExitOK, code)
	other := t.TempDir()
	code, _, errOut = monty(t, "session", "--store", other, "import", "two", file)
	require.Equal(t, cli.ExitOK, code, errOut)
	_, out, _ = monty(t, "--store", other, "--session", "two", "-c", "print(nums, f())")
	assert.Equal(t, "[1, 2] None\n", out)

	require.NoError(t, os.WriteFile(file, []byte("garbage"), 0o600))
	code, _, errOut = monty(t, "session", "--store", other, "import", "three", file)
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "corrupt")

	code, _, _ = monty(t, "session", "--store", dir, "rm", "one")
	require.Equal(t, cli.ExitOK, code)
	code, _, errOut = monty(t, "session", "--store", dir, "show", "one")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "not found")

	code, _, _ = monty(t, "session", "bogus")
	assert.Equal(t, cli.ExitUsage, code)
}
