package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
)

// mountDir is a host directory holding in.txt.
func mountDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("from the host"), 0o644))
	return dir
}

// TestMountFlag: --mount in each mode, for -c, FILE, the REPL and --session.
func TestMountFlag(t *testing.T) {
	dir := mountDir(t)
	code, out, errOut := monty(t, "--mount", dir+":/data", "-c", "print(open('/data/in.txt').read())")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "from the host\n", out)

	// ro (the default) refuses writes.
	code, _, errOut = monty(t, "--mount", dir+":/data", "-c", "from pathlib import Path\nPath('/data/x.txt').write_text('x')")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "PermissionError: [Errno 30] Read-only file system: '/data/x.txt'")

	// rw writes to the host; a FILE run gets the mounts too.
	prog := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(prog, []byte("from pathlib import Path\nPath('/out/result.txt').write_text(Path('/data/in.txt').read_text().upper())\n"), 0o644))
	out2 := t.TempDir()
	code, _, errOut = monty(t, "--mount", dir+":/data", "--mount", out2+":/out:rw", prog)
	assert.Equal(t, cli.ExitOK, code, errOut)
	b, err := os.ReadFile(filepath.Join(out2, "result.txt"))
	require.NoError(t, err)
	assert.Equal(t, "FROM THE HOST", string(b))

	// overlay: the REPL sees its writes from one snippet to the next; the
	// host directory does not change.
	code, out, errOut = montyIn(t, "from pathlib import Path\nPath('/data/in.txt').write_text('changed')\nPath('/data/in.txt').read_text()\n",
		"--mount", dir+":/data:overlay")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Contains(t, out, "'changed'")
	b, err = os.ReadFile(filepath.Join(dir, "in.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from the host", string(b))

	// --session runs and an interactive session see the mounts.
	store := t.TempDir()
	code, out, errOut = monty(t, "--store", store, "--session", "s1", "--mount", dir+":/data", "-c", "print(open('/data/in.txt').read())")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "from the host\n", out)
	_, out, errOut = montyIn(t, "open('/data/in.txt').read()\n", "--store", store, "--session", "s1", "--mount", dir+":/data")
	assert.Contains(t, out, "'from the host'", errOut)

	// Limits: a write past --mount-write-limit raises in the sandbox.
	code, _, errOut = monty(t, "--mount", dir+":/data:overlay", "--mount-write-limit", "10", "-c", "open('/data/x', 'w').write('x' * 11)")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "OSError: disk write limit of 10 bytes exceeded")
}

// TestMountFlagErrors: a malformed --mount is a usage error naming the part
// that is wrong.
func TestMountFlagErrors(t *testing.T) {
	dir := mountDir(t)
	file := filepath.Join(dir, "in.txt")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--mount", dir}, "missing the guest path"},
		{[]string{"--mount", dir + ":data"}, `guest path "data" must be absolute`},
		{[]string{"--mount", dir + ":/data:rx"}, `unknown mode "rx"`},
		{[]string{"--mount", ":/data"}, "host directory is empty"},
		{[]string{"--mount", filepath.Join(dir, "nope") + ":/data"}, "does not exist"},
		{[]string{"--mount", file + ":/data"}, "is not a directory"},
		{[]string{"--mount", dir + ":/a", "--mount", dir + ":/b:rw"}, "overlaps"},
		{[]string{"--mount", dir + ":/data", "--mount-write-limit", "lots"}, "--mount-write-limit"},
		{[]string{"--mount-memory", "1MB"}, "need --mount"},
	} {
		for _, cmd := range [][]string{{"-c", "1"}, {"mcp"}} {
			args := append(append([]string{}, tc.args...), cmd...)
			if cmd[0] == "mcp" {
				args = append([]string{"mcp", "--store", "mem:"}, tc.args...)
			}
			code, out, errOut := monty(t, args...)
			assert.Equal(t, cli.ExitUsage, code, "%v: %s", args, out)
			assert.Contains(t, errOut, tc.says, args)
			assert.True(t, strings.Contains(errOut, "--mount"), args)
		}
	}
}

// TestSessionWorkFiles: a --session run has its own files at /work, saved
// with its state, readable by the next run and by `monty session cat`; a
// mount cannot take /work's place.
func TestSessionWorkFiles(t *testing.T) {
	store := t.TempDir()
	code, _, errOut := monty(t, "--store", store, "--session", "w1", "-c", "open('/work/out.csv', 'w').write('a,b\\n1,2\\n')")
	require.Equal(t, cli.ExitOK, code, errOut)
	code, out, errOut := monty(t, "--store", store, "--session", "w1", "-c", "print(open('out.csv').read().splitlines()[1])")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "1,2\n", out, "the next run reads it, relative to /work")
	code, out, errOut = monty(t, "session", "--store", store, "cat", "w1", "/work/out.csv")
	assert.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "a,b\n1,2\n", out)
	_, out, errOut = montyIn(t, "open('/work/out.csv').read()\n", "--store", store, "--session", "w1")
	assert.Contains(t, out, `'a,b\n1,2\n'`, errOut)

	code, _, errOut = monty(t, "--store", store, "--session", "w1", "--mount", mountDir(t)+":/work/data", "-c", "1")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, "/work is where each session's own files appear")
	code, _, errOut = monty(t, "--mount", mountDir(t)+":/work", "-c", "print(open('/work/in.txt').read())")
	assert.Equal(t, cli.ExitOK, code, "without a session, /work is free: %s", errOut)
}
