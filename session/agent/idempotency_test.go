package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/store/memstore"
)

// An execute_python or resume_python call retried with its
// idempotency_key, by this executor or another on the same store, answers
// what the first did and runs nothing; the key with other arguments is
// refused as bad arguments.
func TestIdempotentToolCalls(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	a := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	b := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	_, err := a.Execute(ctx, "t", json.RawMessage(`{"code": "log = []"}`))
	require.NoError(t, err)

	call := json.RawMessage(`{"code": "log.append(1)\nprint('added')\nlen(log)", "idempotency_key": "c1"}`)
	first, err := a.Execute(ctx, "t", call)
	require.NoError(t, err)
	assert.Equal(t, "added\n1", first.Text)
	again, err := b.Execute(ctx, "t", json.RawMessage(`{"idempotency_key": "c1", "code": "log.append(1)\nprint('added')\nlen(log)"}`))
	require.NoError(t, err)
	assert.Equal(t, first.Text, again.Text, "the first answer")
	assert.Equal(t, first.StateHash, again.StateHash)
	check, err := b.Execute(ctx, "t", json.RawMessage(`{"code": "len(log)"}`))
	require.NoError(t, err)
	assert.Equal(t, "1", check.Text, "ran once")

	_, err = b.Execute(ctx, "t", json.RawMessage(`{"code": "log.append(2)", "idempotency_key": "c1"}`))
	require.ErrorIs(t, err, agent.ErrBadArgs)
	assert.ErrorIs(t, err, session.ErrKeyReused)

	raised, err := a.Execute(ctx, "t", json.RawMessage(`{"code": "log.append(3)\n1/0", "idempotency_key": "c2"}`))
	require.NoError(t, err)
	require.Error(t, raised.Err)
	replay, err := b.Execute(ctx, "t", json.RawMessage(`{"code": "log.append(3)\n1/0", "idempotency_key": "c2"}`))
	require.NoError(t, err)
	require.Error(t, replay.Err, "a replayed exception is still a failure")
	assert.Equal(t, raised.Text, replay.Text)
	assert.Equal(t, "ZeroDivisionError", replay.ErrorType)
	var firstErr, againErr *runtime.Error
	require.ErrorAs(t, raised.Err, &firstErr)
	require.ErrorAs(t, replay.Err, &againErr)
	assert.Equal(t, firstErr.Message, againErr.Message)

	paused, err := a.Execute(ctx, "t", json.RawMessage(`{"code": "x = ask()\nx + 1", "client_tools": [{"name": "ask"}]}`))
	require.NoError(t, err)
	require.NotNil(t, paused.Paused)
	resume := json.RawMessage(`{"run_id": "` + paused.RunID + `", "results": [{"id": "` + paused.Paused.Calls[0].ID + `", "value": 41}], "idempotency_key": "r1"}`)
	done, err := a.Resume(ctx, "t", resume)
	require.NoError(t, err)
	assert.Equal(t, "42", done.Text)
	retried, err := b.Resume(ctx, "t", resume)
	require.NoError(t, err, "the run is over, but the retry replays")
	assert.Equal(t, "42", retried.Text)
}
