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

// TestStoreSpecRefused: every command that takes --store refuses a spec
// that starts with a scheme and is none of the accepted forms: exit 2, an
// error listing the forms, and nothing created. (Before, dir:/x was taken
// for a relative path: each command made a directory named "dir:" and
// carried on.) A relative directory whose name has a colon is still a
// directory when written with ./.
func TestStoreSpecRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("MONTY_SIGNING_KEY", "a-signing-key-long-enough") // serve's
	script := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(script, []byte("x = 1\n"), 0o600))
	for _, spec := range []string{"dir:/x", "file:x", "redis:localhost", "postgres://monty:hunter2@db/monty", "dir:/x,mem:"} {
		for _, args := range [][]string{
			{"--store", spec, "--session", "s", "-c", "x = 1"},
			{"--store", spec, "--session", "s", script},
			{"--store", spec, "--session", "s"}, // the REPL, on empty input
			{"session", "--store", spec, "ls"},
			{"session", "--store", spec, "show", "s"},
			{"session", "--store", spec, "rm", "s"},
			{"mcp", "--store", spec}, // on empty input
			// An address that cannot be listened on ends serve at the
			// latest when it would start serving.
			{"serve", "--store", spec, "--addr", "no address"},
		} {
			code, out, errOut := montyIn(t, "", args...)
			assert.Equal(t, cli.ExitUsage, code, "%q: %s", args, errOut)
			var missing []string
			for _, form := range []string{"unknown scheme", "a directory", "./name:x", "file:///path", "mem:", "redis://", "s3://", "HOT,COLD"} {
				if !strings.Contains(errOut, form) {
					missing = append(missing, form)
				}
			}
			assert.Empty(t, missing, "%q: the error %q does not list these forms", args, errOut)
			assert.NotContains(t, errOut+out, "hunter2", "%q shows the password", args)
		}
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "refused specs made these in the working directory")

	code, _, errOut := monty(t, "--store", "./dir:x", "--session", "s", "-c", "x = 1")
	require.Equal(t, cli.ExitOK, code, errOut)
	code, out, errOut := monty(t, "session", "--store", "./dir:x", "ls")
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Contains(t, out, "s ")
	fi, err := os.Stat("dir:x")
	require.NoError(t, err, "./dir:x is a directory named dir:x")
	assert.True(t, fi.IsDir())
}
