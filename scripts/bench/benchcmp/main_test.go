package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkerScriptsExist fails when a column's Python worker moves without
// benchcmp: the wasmtime and cpython columns would fail on every workload
// and leave the table without them (as after scripts/bench/ was made).
func TestWorkerScriptsExist(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, script := range []string{wasmtimeScript, cpythonScript} {
		_, err := os.Stat(filepath.Join(root, script))
		require.NoError(t, err, "benchcmp runs %s from the repository's root", script)
	}
}

// TestUpstreamFiles runs the upstream column's two files of a program with
// python3: the program runs twice in one and once in the other, the copy
// that does not run is still there to compile, and both end on the
// program's last expression, whose value upstream's binary prints.
func TestUpstreamFiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the machine has python3")
	program := "import math\n\ndef f(x):\n    return x + 1\n\nn = 0\nfor i in range(3):\n    n += f(i)\nprint('ran', n)\nmath.floor(n * 1.5)\n\n"
	twice, once := upstreamFiles(program)
	dir := t.TempDir()
	run := func(text string) string {
		file := filepath.Join(dir, "p.py")
		require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
		out, err := exec.Command(python, file).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	require.Equal(t, "ran 6\nran 6\n", run(twice))
	require.Equal(t, "ran 6\n", run(once))
	for _, file := range []string{twice, once} {
		require.True(t, strings.HasSuffix(file, "\nmath.floor(n * 1.5)\n"), "ends on the program's value: %q", file)
	}
	require.Equal(t, 2, strings.Count(once, "return x + 1"), "the copy not run is in the file")
	require.Contains(t, once, "\n    n = 0\n", "the copy not run is indented under the if")
}
