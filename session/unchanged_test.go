package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
)

// TestReadsStoreNothing: a call that changes nothing stores nothing (the
// stored entry keeps its version), so it succeeds while the store refuses
// writes; every kind of change, however hidden (a private global, a
// closure's cell, a default argument, a class attribute, the random
// generator, an element appended), is stored, and fails in that outage.
func TestReadsStoreNothing(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewRefusing(memstore.New(memstore.Options{}))
	s := open(t, "reads", session.Options{Store: st})
	exec(t, s, `
import random
x = [1, 2, 3]
d = {'a': 1}
_hidden = 0
def f(a):
    return a + 1
class C:
    n = 0
def make():
    cell = [0]
    def inc():
        cell[0] += 1
        return cell[0]
    return inc
inc = make()
def memo(k, cache={}):
    cache[k] = 1
    return len(cache)
`)
	before, err := st.Stat(ctx, "reads")
	require.NoError(t, err)

	st.Refuse(true)
	for code, want := range map[string]object.Value{
		"x":                       nil,
		"x[0] + 1":                object.Int(2),
		"f(2)":                    object.Int(3),
		"len(x) + len(d)":         object.Int(4),
		"str(x)":                  object.Str("[1, 2, 3]"),
		"[i * 2 for i in x][-1]":  object.Int(6),
		"C.n":                     object.Int(0),
		"sorted(d.items())[0][0]": object.Str("a"),
		"print('reading')\nx[1]":  object.Int(2),
		"try:\n    x[9]\nexcept IndexError:\n    pass\nlen(x)": object.Int(3),
	} {
		res, err := s.Exec(ctx, code)
		require.NoError(t, err, "a read (%q) needs no write", code)
		require.Nil(t, res.Err, "%q", code)
		if want != nil {
			assert.Equal(t, want, res.Value, "%q", code)
		}
		assert.True(t, res.Saved, "%q: the stored state is the session's", code)
		assert.Equal(t, before.SHA256, res.StateHash, "%q", code)
	}
	res, err := s.ExecOptions(ctx, "x[2]", session.ExecOptions{Idempotency: &session.Idempotency{Key: "read-1", Fingerprint: "f"}})
	require.NoError(t, err, "a keyed read while the key cannot be stored")
	assert.Equal(t, object.Int(3), res.Value)

	for _, code := range []string{
		"x.append(4)", "d['b'] = 2", "_hidden = 1", "C.n = 1", "inc()", "memo(1)", "random.random()", "y = 1", "d.pop('a')", "import json",
	} {
		_, err := s.Exec(ctx, code)
		require.ErrorIs(t, err, store.ErrUnavailable, "%q changes the session: it must be stored", code)
	}
	st.Refuse(false)
	after, err := st.Stat(ctx, "reads")
	require.NoError(t, err)
	assert.Equal(t, before.Version, after.Version, "nothing was written")
	res = exec(t, s, "x.append(4)\n(len(x), C.n, inc(), _hidden)")
	assert.Equal(t, object.Tuple{object.Int(4), object.Int(0), object.Int(1), object.Int(0)}, res.Value, "the failed calls left nothing behind")

	// A read after reopening (the state comes from the store) stores
	// nothing either.
	again := open(t, "reads", session.Options{Store: st})
	stored, err := st.Stat(ctx, "reads")
	require.NoError(t, err)
	assert.Equal(t, object.Int(4), exec(t, again, "len(x)").Value)
	now, err := st.Stat(ctx, "reads")
	require.NoError(t, err)
	assert.Equal(t, stored.Version, now.Version)
}
