package cli_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
)

// sessionFile is the directory store's file of session id.
func sessionFile(dir, id string) string {
	return filepath.Join(dir, fmt.Sprintf("%x.session", sha256.Sum256([]byte(id))))
}

// TestSessionCorruptState: a --session run or REPL on damaged state (a
// damaged file of the directory store) or foreign state (a blob of another
// format) starts empty and says so on stderr; with --on-corrupt-state fail
// it stops, keeping the state in place.
func TestSessionCorruptState(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, dir, id string){
		"damaged-file": func(t *testing.T, dir, id string) {
			code, _, errOut := monty(t, "--store", dir, "--session", id, "-c", "secret = 1")
			require.Equal(t, cli.ExitOK, code, errOut)
			require.NoError(t, os.Truncate(sessionFile(dir, id), 30))
		},
		"foreign-blob": func(t *testing.T, dir, id string) {
			st, err := dirstore.Open(dir, dirstore.Options{})
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Put(context.Background(), id, []byte(`{"secret": 1}`), store.Cond{})
			require.NoError(t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			plant(t, dir, "s")
			before, err := os.ReadFile(sessionFile(dir, "s"))
			require.NoError(t, err)

			code, _, errOut := monty(t, "--store", dir, "--session", "s", "--on-corrupt-state", "fail", "-c", "1")
			assert.Equal(t, cli.ExitException, code)
			assert.Contains(t, errOut, "its stored state cannot be loaded")
			assert.Contains(t, errOut, "--on-corrupt-state fresh")
			after, err := os.ReadFile(sessionFile(dir, "s"))
			require.NoError(t, err)
			assert.Equal(t, before, after, "fail mode leaves the state in place")

			// The REPL says so too, and starts empty.
			code, out, errOut := montyIn(t, "'secret' in locals()\n", "--store", dir, "--session", "s")
			require.Equal(t, cli.ExitOK, code, errOut)
			assert.Contains(t, errOut, "monty: session s: its stored state could not be loaded")
			assert.Contains(t, errOut, `kept aside as "s.corrupt.`)
			assert.Contains(t, out, "False")

			// The REPL stored its fresh state: the session is repaired.
			code, out, errOut = monty(t, "--store", dir, "--session", "s", "-c", "print('secret' in locals())")
			require.Equal(t, cli.ExitOK, code, errOut)
			assert.Empty(t, errOut)
			assert.Equal(t, "False\n", out)

			// A --session run on damaged state says so on stderr and runs.
			plant(t, dir, "t")
			code, out, errOut = monty(t, "--store", dir, "--session", "t", "-c", "x = 2\nprint('secret' in locals())")
			require.Equal(t, cli.ExitOK, code, errOut)
			assert.Contains(t, errOut, "monty: session t: its stored state could not be loaded")
			assert.Equal(t, "False\n", out)
			code, out, errOut = monty(t, "--store", dir, "--session", "t", "-c", "print(x)")
			require.Equal(t, cli.ExitOK, code, errOut)
			assert.Empty(t, errOut)
			assert.Equal(t, "2\n", out)
		})
	}
	code, _, errOut := monty(t, "--on-corrupt-state", "ignore", "-c", "1")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, "use fresh or fail")
	code, _, errOut = monty(t, "mcp", "--store", "mem:", "--on-corrupt-state", "ignore")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, "use fresh or fail")
}
