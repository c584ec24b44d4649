package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
)

// TestSessionLsSkipsUnreadable: one corrupt file in the store does not
// hide the other sessions: ls lists them (and not the claims of servers),
// warns about the corrupt one on stderr and exits 0.
func TestSessionLsSkipsUnreadable(t *testing.T) {
	dir := t.TempDir()
	st, err := dirstore.Open(dir, dirstore.Options{})
	require.NoError(t, err)
	// ls reads only the store's metadata; a server's claim held in the
	// store (a lease) is not a session.
	for _, id := range []string{"alpha", "beta/2", session.LeaseID("alpha")} {
		_, err := st.Put(context.Background(), id, []byte("state of "+id), store.Cond{})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	corrupt := filepath.Join(dir, strings.Repeat("ab", 32)+".session")
	require.NoError(t, os.WriteFile(corrupt, []byte("not a session file"), 0o600))

	code, out, errOut := monty(t, "session", "--store", dir, "ls")
	assert.Equal(t, cli.ExitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.True(t, strings.HasPrefix(lines[1], "alpha "), out)
	assert.True(t, strings.HasPrefix(lines[2], "beta/2 "), out)
	warnings := strings.Split(strings.TrimSpace(errOut), "\n")
	require.Len(t, warnings, 1, errOut)
	assert.True(t, strings.HasPrefix(warnings[0], "monty: warning: skipping "+corrupt+": "), errOut)
	assert.Contains(t, warnings[0], "not a session file")
}
