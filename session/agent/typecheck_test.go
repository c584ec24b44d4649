package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// TestExecutorTypeCheck: with TypeCheck on, a call whose code has
// problems is not run; the model reads the diagnostics as the error text,
// and the session is unchanged. A call's type_check argument overrides the
// executor's setting.
func TestExecutorTypeCheck(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{TypeCheck: true, Stubs: "LIMIT: int\n"})
	assert.Contains(t, string(e.Tool().Parameters), `"type_check"`)
	res := agenttest.Execute(t, e, "t", "total = add(1, 2)\nprint(total, LIMIT if False else 0)")
	require.NoError(t, res.Err)

	res = agenttest.Execute(t, e, "t", "total = 100\nadd(total, 'x')")
	require.ErrorIs(t, res.Err, typecheck.ErrTypeErrors)
	assert.Equal(t, agent.TypeCheckErrorType, res.ErrorType)
	assert.Contains(t, res.Text, "error[invalid-argument-type]: Argument to function `add` is incorrect\n --> main.py:2:12")
	assert.Contains(t, res.Text, "the code was not run")
	assert.False(t, res.Saved)
	assert.Equal(t, "3", agenttest.OK(t, e, "t", "total"), "the refused call changed nothing")

	// Checked against the session's own earlier calls.
	res = agenttest.Execute(t, e, "t", "total.upper()")
	require.ErrorIs(t, res.Err, typecheck.ErrTypeErrors)

	// The argument turns checking off for one call.
	res, err := e.Execute(context.Background(), "t", json.RawMessage(`{"code": "add(total, 'x')", "type_check": false}`))
	require.NoError(t, err)
	assert.Equal(t, "TypeError", res.ErrorType, "ran, and failed at run time")

	// ...and on, on an executor that does not check by default.
	plain := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	res, err = plain.Execute(context.Background(), "t", json.RawMessage(`{"code": "add('a', 'b')", "type_check": true}`))
	require.NoError(t, err)
	require.ErrorIs(t, res.Err, typecheck.ErrTypeErrors)
	_, err = plain.Execute(context.Background(), "t", json.RawMessage(`{"code": "1", "type_check": "yes"}`))
	require.ErrorIs(t, err, agent.ErrBadArgs)
}
