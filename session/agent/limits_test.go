package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestExecuteHostileLimits runs issue 9's attacks through execute_python:
// each is the code's failure (a tool result with an error, never a Go
// error), says which limit it hit, and leaves the session usable as it was.
func TestExecuteHostileLimits(t *testing.T) {
	limits := runtime.DefaultLimits()
	limits.MaxDuration, limits.MaxMemory, limits.MaxHostCalls = 500*time.Millisecond, 32<<20, runtime.Unlimited
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Limits: limits}})
	agenttest.OK(t, e, "h", "keep = 1")
	for _, c := range []struct {
		code, errType string
		limit         error
	}{
		{"import time\nkeep = 2\nwhile True:\n    time.sleep(0.05)", "TimeoutError", runtime.ErrTimeLimit},
		{"import time\nkeep = 2\ntime.sleep(30)", "TimeoutError", runtime.ErrTimeLimit},
		{"keep = 2\nx = 10**10**7", "OverflowError", runtime.ErrIntLimit},
		{"keep = 2\ns = 'a' * 10**6\n[s] * 300", "MemoryError", runtime.ErrResultLimit},
	} {
		start := time.Now()
		res := agenttest.Execute(t, e, "h", c.code)
		assert.Less(t, time.Since(start), 2*time.Second, c.code)
		require.ErrorIs(t, res.Err, c.limit, c.code)
		assert.Equal(t, c.errType, res.ErrorType, c.code)
		assert.Contains(t, res.Text, c.errType, c.code)
		assert.NotContains(t, res.Text, "wasm", c.code)
		assert.Equal(t, "1", agenttest.OK(t, e, "h", "keep"), "rolled back: %s", c.code)
	}
}

// TestExecuteStateOverLimit: a stored state larger than the executor's
// memory limit is reported to the model as the code's failure, and kept.
func TestExecuteStateOverLimit(t *testing.T) {
	st := memstore.New(memstore.Options{})
	big := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 64 << 20}}})
	agenttest.OK(t, big, "s", "x = 'a' * (20 << 20)")
	small := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 8 << 20}}})
	res, err := small.Execute(context.Background(), "s", agenttest.CodeArgs("len(x)"))
	require.NoError(t, err)
	require.ErrorIs(t, res.Err, runtime.ErrMemoryLimit)
	assert.Equal(t, "MemoryError", res.ErrorType)
	assert.Contains(t, res.Text, "memory limit")
	assert.Equal(t, "20971520", agenttest.OK(t, big, "s", "len(x)"), "the state is kept")
}
