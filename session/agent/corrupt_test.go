package agent_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestCorruptStateResetsSession: a conversation whose stored state is
// damaged, signed with another key, of another format, or a damaged file
// of the directory store, starts empty; the first call's text says so and
// why, later calls do not repeat it.
func TestCorruptStateResetsSession(t *testing.T) {
	ctx := context.Background()
	key := []byte("this executor's signing key")
	other := memstore.New(memstore.Options{})
	theirs := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: other, SigningKey: []byte("someone else's key")}})
	agenttest.OK(t, theirs, "t", "secret = 42")
	foreign, err := other.Get(ctx, "t")
	require.NoError(t, err)
	damaged := append([]byte(nil), foreign.Data...)
	damaged[len(damaged)-10] ^= 1

	dir := t.TempDir()
	ds, err := dirstore.Open(dir, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })

	for name, c := range map[string]struct {
		st     store.Store
		plant  func(t *testing.T, st store.Store)
		reason string
	}{
		"other-signing-key": {memstore.New(memstore.Options{}), putBlob(foreign.Data), "signature does not verify"},
		"damaged":           {memstore.New(memstore.Options{}), putBlob(damaged), "signature"},
		"other-format":      {memstore.New(memstore.Options{}), putBlob([]byte(`{"secret": 42}`)), "not a monty-go session blob"},
		"dirstore-file": {ds, func(t *testing.T, st store.Store) {
			putBlob(foreign.Data)(t, st)
			path := filepath.Join(dir, fmt.Sprintf("%x.session", sha256.Sum256([]byte("t"))))
			require.NoError(t, os.Truncate(path, 40))
		}, "its stored entry is damaged"},
	} {
		t.Run(name, func(t *testing.T) {
			c.plant(t, c.st)
			e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: c.st, SigningKey: key}})
			res := agenttest.Execute(t, e, "t", "'secret' in locals()")
			require.NoError(t, res.Err, res.Text)
			assert.Contains(t, res.StateWarning, "could not be loaded")
			assert.Contains(t, res.StateWarning, c.reason)
			assert.Contains(t, res.StateWarning, `"t.corrupt.`)
			assert.True(t, strings.HasPrefix(res.Text, res.StateWarning), res.Text)
			assert.True(t, strings.HasSuffix(res.Text, "\nFalse"), res.Text)
			assert.True(t, res.Saved)
			again := agenttest.Execute(t, e, "t", "1 + 1")
			assert.Empty(t, again.StateWarning)
			assert.Equal(t, "2", again.Text)
			// Another executor on the store: the session is repaired.
			assert.Equal(t, "3", agenttest.OK(t, agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: c.st, SigningKey: key}}), "t", "1 + 2"))
		})
	}
}

func putBlob(data []byte) func(t *testing.T, st store.Store) {
	return func(t *testing.T, st store.Store) {
		t.Helper()
		_, err := st.Put(context.Background(), "t", data, store.Cond{})
		require.NoError(t, err)
	}
}

// TestCorruptStateFailOption: with FailOnCorruptState the call fails with
// an error matching session.ErrCorrupt, and the state stays in place.
func TestCorruptStateFailOption(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	putBlob([]byte("garbage"))(t, st)
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}, FailOnCorruptState: true})
	_, err := e.Execute(ctx, "t", agenttest.CodeArgs("1"))
	var cse *session.CorruptStateError
	require.ErrorAs(t, err, &cse)
	assert.NotEmpty(t, cse.QuarantinedAs)
	obj, err := st.Get(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "garbage", string(obj.Data))
}
