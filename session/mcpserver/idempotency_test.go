package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
)

// execute_python's idempotency_key over MCP: a retry through another
// server on the same store answers what the first call did and runs
// nothing; the key with other code is a tool error.
func TestIdempotencyKeyOverMCP(t *testing.T) {
	st := memstore.New(memstore.Options{})
	executor := func() *agent.Executor {
		keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
		e, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
		require.NoError(t, err)
		t.Cleanup(keeper.Close)
		return e
	}
	a, b := connect(t, executor()), connect(t, executor())
	call(t, a, "execute_python", map[string]any{"code": "n = 0"})
	args := map[string]any{"code": "n += 1\nn", "idempotency_key": "once"}
	first, failed := call(t, a, "execute_python", args)
	require.False(t, failed, first)
	assert.Equal(t, "1", first)
	again, failed := call(t, b, "execute_python", args)
	require.False(t, failed, again)
	assert.Equal(t, "1", again, "the first answer, not a second run")
	text, _ := call(t, b, "execute_python", map[string]any{"code": "n"})
	assert.Equal(t, "1", text)
	text, failed = call(t, a, "execute_python", map[string]any{"code": "n = 100", "idempotency_key": "once"})
	assert.True(t, failed)
	assert.Contains(t, text, "idempotency key already used")
}
