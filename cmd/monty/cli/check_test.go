package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
)

const wrongCall = "def add(x: int, y: int) -> int:\n    return x + y\n\nprint(add(1, '2'))\n"

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.py")
	good := filepath.Join(dir, "good.py")
	require.NoError(t, os.WriteFile(bad, []byte(wrongCall), 0o644))
	require.NoError(t, os.WriteFile(good, []byte("print(sum([1, 2]))\n"), 0o644))

	code, out, errOut := monty(t, "check", good)
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Empty(t, out)

	code, out, _ = monty(t, "check", "--format", "concise", good, bad)
	assert.Equal(t, cli.ExitException, code)
	assert.Equal(t, "bad.py:4:14: error[invalid-argument-type] Argument to function `add` is incorrect: Expected `int`, found `Literal[\"2\"]`\n", out)

	code, out, _ = monty(t, "check", "--format", "json", bad)
	assert.Equal(t, cli.ExitException, code)
	var diags []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &diags), out)
	require.Len(t, diags, 1)

	// Stubs declare what the host provides.
	stubs := filepath.Join(dir, "host.pyi")
	require.NoError(t, os.WriteFile(stubs, []byte("def fetch(url: str) -> bytes: ...\n"), 0o644))
	code, _, errOut = monty(t, "check", "--stubs", stubs, "-c", "fetch('x').decode()")
	assert.Equal(t, cli.ExitOK, code, errOut)
	code, _, _ = monty(t, "check", "-c", "fetch('x')")
	assert.Equal(t, cli.ExitException, code)

	for _, args := range [][]string{{"check"}, {"check", "--format", "xml", good}, {"check", "-c", "1", good},
		{"check", filepath.Join(dir, "missing.py")}, {"check", "--stubs", filepath.Join(dir, "missing.pyi"), good}} {
		code, _, errOut = monty(t, args...)
		assert.Equal(t, cli.ExitUsage, code, "%v: %s", args, errOut)
	}
}

func TestTypeCheckBeforeRunning(t *testing.T) {
	code, out, errOut := monty(t, "--type-check", "-c", wrongCall)
	assert.Equal(t, cli.ExitException, code)
	assert.Empty(t, out, "nothing ran")
	assert.Contains(t, errOut, "error[invalid-argument-type]")
	assert.Contains(t, errOut, "type check failed; nothing was run")

	code, out, errOut = monty(t, "--type-check", "-c", "print(1 + 1)")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "2\n", out)

	code, _, errOut = monty(t, "--stubs", "x.pyi", "-c", "1")
	assert.Equal(t, cli.ExitUsage, code, errOut)
}

func TestTypeCheckedREPL(t *testing.T) {
	input := "def double(n: int) -> int:\n    return n * 2\n\ndouble('x')\ndouble(21)\n"
	code, out, errOut := montyIn(t, input, "--type-check")
	assert.Equal(t, cli.ExitOK, code)
	assert.Contains(t, errOut, "error[invalid-argument-type]", "checked against the earlier snippet")
	assert.Contains(t, out, "42\n")
	assert.NotContains(t, out, "'xx'")

	// A session keeps its checking context between processes.
	dir := t.TempDir()
	code, _, errOut = monty(t, "--type-check", "--store", dir, "--session", "typed", "-c", "def half(n: int) -> float:\n    return n / 2\n")
	require.Equal(t, cli.ExitOK, code, errOut)
	code, _, errOut = monty(t, "--type-check", "--store", dir, "--session", "typed", "-c", "half('4')")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "error[invalid-argument-type]")
	code, out, errOut = monty(t, "--type-check", "--store", dir, "--session", "typed", "-c", "print(half(4))")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "2.0\n", out)
}
