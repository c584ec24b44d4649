package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestStoredHeapCountsAgainstMemoryLimit is issue 9's item 3 through
// sessions: each call adding a limit's worth of heap to the stored state
// used to succeed, because the heap a session started with was not counted.
func TestStoredHeapCountsAgainstMemoryLimit(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	opts := session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 24 << 20}}
	for i, v := range []string{"a", "b", "c"} {
		s, err := session.Open(ctx, "grow", opts)
		require.NoError(t, err)
		res, err := s.Exec(ctx, "_"+v+" = '"+v+"' * (10 << 20)")
		require.NoError(t, err)
		_ = s.Close(ctx)
		if i < 2 {
			require.Nil(t, res.Err, "call %d fits", i)
			require.True(t, res.Saved)
			continue
		}
		require.NotNil(t, res.Err, "the third 10 MiB string passes the 24 MiB limit")
		assert.ErrorIs(t, res.Err, runtime.ErrMemoryLimit)
		assert.False(t, res.Saved)
	}
}

// TestStateOverMemoryLimitIsKept: opening a session whose stored heap is
// larger than the caller's limit is a clear error naming the limit, and the
// stored state is neither changed nor quarantined.
func TestStateOverMemoryLimitIsKept(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	big := open(t, "big", session.Options{Store: st})
	require.Nil(t, exec(t, big, "x = 'a' * (20 << 20)\ny = 1").Err)
	require.NoError(t, big.Close(ctx))
	before, err := st.Get(ctx, "big")
	require.NoError(t, err)

	_, err = session.Open(ctx, "big", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 8 << 20}})
	require.ErrorIs(t, err, runtime.ErrMemoryLimit)
	assert.NotErrorIs(t, err, session.ErrCorrupt)
	assert.Contains(t, err.Error(), "memory limit")
	assert.Contains(t, err.Error(), "kept unchanged")

	after, err := st.Get(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, before.Data, after.Data, "the stored state is untouched")
	list, err := st.List(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1, "no quarantine copy")

	// With room, it opens as it was.
	s := open(t, "big", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 64 << 20}})
	assert.Equal(t, object.Int(20<<20), exec(t, s, "len(x)").Value)
}

// TestJSONViewIsBounded is issue 9's item 4: the JSON view of a state with
// a large shared structure was built without any memory limit (3.4 GB
// peak). It is now built under a budget of its own; what does not fit is
// left out of the view, and kept in the dump.
func TestJSONViewIsBounded(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "view", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 64 << 20}, MaxViewSize: 4 << 20})
	res := exec(t, s, "s = 'a' * 10**6\nx = [s] * 500\nn = 3\nlen(x)")
	require.Nil(t, res.Err)
	assert.Equal(t, object.Int(500), res.Value)
	assert.True(t, res.Saved)
	assert.Equal(t, []string{"x"}, res.ViewOmitted)
	state := s.State()
	assert.Len(t, state["s"], 1000000)
	assert.NotContains(t, state, "x")
	assert.EqualValues(t, "3", state["n"].(interface{ String() string }).String())
	assert.ElementsMatch(t, []string{"n", "s", "x"}, s.Globals())

	// The dump keeps x in full.
	s2 := open(t, "view", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 64 << 20}})
	assert.Equal(t, object.Int(500), exec(t, s2, "len(x)").Value)
}

// TestStateNearLimitSaves: a state that fits the memory limit can be saved;
// the dump's own memory used to trip the hard ceiling (an 80 MiB string
// under a 128 MiB limit failed every save).
func TestStateNearLimitSaves(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "near", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 128 << 20}})
	res := exec(t, s, "s = 'a' * (80 << 20)\nlen(s)")
	require.Nil(t, res.Err)
	assert.True(t, res.Saved, res.NotSavedReason)
	s2 := open(t, "near", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 128 << 20}})
	assert.Equal(t, object.Int(80<<20), exec(t, s2, "len(s)").Value)
}

// TestJSONStateOverLimitIsKept: a JSON-only state too large for the
// caller's memory limit is a memory limit error, not corruption.
func TestJSONStateOverLimitIsKept(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	big := open(t, "json", session.Options{Store: st, JSONOnly: true, MaxViewSize: 32 << 20})
	require.Nil(t, exec(t, big, "x = 'a' * (16 << 20)").Err)
	require.NoError(t, big.Close(ctx))
	_, err := session.Open(ctx, "json", session.Options{Store: st, JSONOnly: true, Limits: runtime.Limits{MaxMemory: 4 << 20}})
	require.ErrorIs(t, err, runtime.ErrMemoryLimit)
	assert.NotErrorIs(t, err, session.ErrCorrupt)
	list, err := st.List(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1, "no quarantine copy")
}
