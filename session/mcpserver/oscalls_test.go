package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
)

// execute_python's code may await asyncio.sleep, directly, inside a
// coroutine and gathered, as it may over monty.v1 (the sleep is the
// server's own: nothing reaches the client).
func TestAsyncSleepOverMCP(t *testing.T) {
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	t.Cleanup(keeper.Close)
	e, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
	require.NoError(t, err)
	c := connect(t, e)
	code := "import asyncio\nasync def f(i):\n    r = await asyncio.sleep(0.01 * i)\n    return (i, r)\n" +
		"await asyncio.sleep(0.01)\nawait asyncio.gather(f(2), f(1), f(0))"
	text, failed := call(t, c, "execute_python", map[string]any{"code": code})
	require.False(t, failed, text)
	assert.Equal(t, "[(2, None), (1, None), (0, None)]", text)
}
