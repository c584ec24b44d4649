package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// namespaced are the options of an executor that keeps its sessions in
// API namespace ns, as monty mcp --api-key does.
func namespaced(st store.Store, ns string, signing []byte) agent.ExecutorOptions {
	return agent.ExecutorOptions{
		Session: session.Options{Store: st},
		Keys:    func(id string) ([]byte, [][]byte) { return apikey.StoreKeys(signing, id) },
		StoreID: func(thread, sessionID string) (string, error) {
			id, err := apikey.ThreadSessionID(thread, sessionID)
			return apikey.StoreID(ns, id), err
		},
	}
}

// TestExecutorStoreID: with ExecutorOptions.StoreID (and Keys)
// every tool keeps the sessions where the hook says, signed with their
// keys; ids the hook refuses are the caller's to correct.
func TestExecutorStoreID(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	signing := []byte("0123456789abcdef-signing")
	e := agenttest.NewExecutor(t, namespaced(st, "kns", signing))

	res := agenttest.Execute(t, e, "conv", "x = 1")
	require.NoError(t, res.Err)
	assert.Equal(t, "kns/conv", res.StoreID)
	args, _ := json.Marshal(map[string]any{"code": "y = 2\nask()", "session_id": "side", "client_tools": []map[string]any{{"name": "ask"}}})
	res, err := e.Execute(ctx, "conv", args)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.Equal(t, "kns/conv.side", res.StoreID)
	assert.Equal(t, "side", res.SessionID, "the caller's name, not the store's")
	for _, id := range []string{"conv", "conv.side"} {
		obj, err := st.Get(ctx, "kns/"+id)
		require.NoError(t, err, id)
		_, err = session.Inspect(obj.Data, apikey.StateKey(signing, "kns", id))
		require.NoError(t, err, "%s is signed with the API's key of the session", id)
	}

	p, err := e.Paused(ctx, "conv", "side")
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.Equal(t, res.RunID, p.RunID)
	res, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "`+res.RunID+`", "session_id": "side", "results": [{"id": "0", "value": 5}]}`))
	require.NoError(t, err)
	assert.Equal(t, "5", res.Text)

	// Another executor with the same hooks continues both.
	e2 := agenttest.NewExecutor(t, namespaced(st, "kns", signing))
	assert.Equal(t, "1", agenttest.OK(t, e2, "conv", "x"))
	res, err = e2.Execute(ctx, "conv", json.RawMessage(`{"code": "y", "session_id": "side"}`))
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), res.Value)

	// Another namespace does not see them.
	e3 := agenttest.NewExecutor(t, namespaced(st, "kother", signing))
	assert.Contains(t, agenttest.Execute(t, e3, "conv", "x").Text, "NameError")

	// Reset deletes the mapped session.
	require.NoError(t, e2.Reset(ctx, "conv", "side"))
	_, err = st.Get(ctx, "kns/conv.side")
	assert.ErrorIs(t, err, store.ErrNotFound)

	// The hook's refusals are *ArgsError of the tool, wrapping its error.
	for _, c := range []struct{ thread, args string }{
		{"conv", `{"code": "1", "session_id": "a:b"}`},
		{"a.b", `{"code": "1"}`},
	} {
		_, err := e.Execute(ctx, c.thread, json.RawMessage(c.args))
		require.ErrorIs(t, err, agent.ErrBadArgs, c.args)
		require.ErrorIs(t, err, apikey.ErrBadSessionID)
		var ae *agent.ArgsError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, agent.ToolName, ae.Tool)
	}
	_, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "r", "session_id": "a:b", "results": [{"id": "0", "value": 1}]}`))
	assert.ErrorIs(t, err, apikey.ErrBadSessionID)
	assert.ErrorIs(t, e.Reset(ctx, "conv", "a:b"), apikey.ErrBadSessionID)
	_, err = e.Paused(ctx, "conv", "a:b")
	assert.ErrorIs(t, err, apikey.ErrBadSessionID)

	// An id the store refuses is refused too.
	bad := agenttest.NewExecutor(t, agent.ExecutorOptions{StoreID: func(string, string) (string, error) { return "../x", nil }})
	_, err = bad.Execute(ctx, "conv", json.RawMessage(`{"code": "1"}`))
	assert.ErrorIs(t, err, agent.ErrBadArgs)
	assert.ErrorIs(t, err, store.ErrInvalidID)
}
