package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestSessionMovesToCompiledCode: a session opened while its engine runs
// on wazero's interpreter engine (a fast start) continues on compiled
// machine code once the engine has it, with its state.
func TestSessionMovesToCompiledCode(t *testing.T) {
	ctx := context.Background()
	dir, release := runtimetest.GatedCache(t)
	e, err := runtime.NewEngine(ctx, runtime.WithWazero(), runtime.WithFastStart(), runtime.WithCacheDir(dir))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(ctx) })
	s := open(t, "early", session.Options{Store: memstore.New(memstore.Options{}), Engine: e})
	exec(t, s, "def f(n):\n    return n * 2\nx = 20")
	require.False(t, session.LiveInterpreter(s).Compiled())

	release()
	require.NoError(t, e.WaitCompiled(ctx))
	res := exec(t, s, "f(x) + 2")
	assert.Equal(t, object.Value(object.Int(42)), res.Value)
	assert.True(t, session.LiveInterpreter(s).Compiled(), "the session moved to compiled code")
}
