package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestAnswer: what a model is told of each kind of call, and the few
// failures that are the caller's to handle instead.
func TestAnswer(t *testing.T) {
	ctx := context.Background()
	keeper := agenttest.Keeper(t, memstore.New(memstore.Options{}))
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Keeper: keeper})
	answer := func(key, name string, args json.RawMessage) (string, bool) {
		t.Helper()
		text, failed, err := e.Answer(ctx, key, name, args)
		require.NoError(t, err)
		return text, failed
	}

	text, failed := answer("conv", agent.ToolName, agenttest.CodeArgs("x = 6\nprint(x * 7)"))
	assert.Equal(t, "42", text)
	assert.False(t, failed)
	text, failed = answer("conv", agent.ToolName, agenttest.CodeArgs("y = None"))
	assert.Equal(t, agent.NoOutput, text)
	assert.False(t, failed)
	text, failed = answer("conv", agent.ToolName, agenttest.CodeArgs("x // 0"))
	assert.Contains(t, text, "ZeroDivisionError")
	assert.True(t, failed, "an exception is a failed call")
	text, failed = answer("other", agent.ToolName, agenttest.CodeArgs("x"))
	assert.Contains(t, text, "NameError", "each conversation has its own session")
	assert.True(t, failed)

	text, failed = answer("conv", agent.ToolName, json.RawMessage(`{"cod": "1"}`))
	assert.Contains(t, text, "execute_python")
	assert.True(t, failed, "arguments the tool does not take go back to the model")
	text, failed = answer("conv", "search_web", json.RawMessage(`{}`))
	assert.Equal(t, `Unknown tool "search_web": the tools here are execute_python and resume_python.`, text)
	assert.True(t, failed)
	text, failed = answer("conv", agent.ResumeToolName, json.RawMessage(`{"run_id": "nope", "results": []}`))
	assert.NotEmpty(t, text)
	assert.True(t, failed, "a resume of no paused run")

	for _, key := range []string{"", "a/b"} {
		_, _, err := e.Answer(ctx, key, agent.ToolName, agenttest.CodeArgs("1"))
		require.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		assert.Contains(t, err.Error(), "conversation key")
	}

	cause := errors.New("the user left")
	cctx, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	_, _, err := e.Answer(cctx, "conv", agent.ToolName, agenttest.CodeArgs("1"))
	require.ErrorIs(t, err, cause)

	keeper.Close()
	_, _, err = e.Answer(ctx, "conv", agent.ToolName, agenttest.CodeArgs("1"))
	require.ErrorIs(t, err, session.ErrClosed)
}
