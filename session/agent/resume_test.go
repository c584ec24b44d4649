package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// TestExecutorClientTools: execute_python with client_tools pauses at
// their calls (Result.Paused, and Text says how to answer); Resume
// continues the run; results that do not fit the run are ErrBadArgs.
func TestExecutorClientTools(t *testing.T) {
	ctx := context.Background()
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	args, _ := json.Marshal(map[string]any{"code": "try:\n    v = ask('color?', strict=True)\nexcept ValueError as err:\n    v = 'no: ' + str(err)\nv",
		"client_tools": []map[string]any{{"name": "ask"}}})
	res, err := e.Execute(ctx, "conv", args)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	require.Len(t, res.Paused.Calls, 1)
	c := res.Paused.Calls[0]
	assert.Equal(t, "ask('color?', strict=True)", c.Call)
	assert.Equal(t, []json.RawMessage{json.RawMessage(`"color?"`)}, c.Args)
	assert.Equal(t, map[string]json.RawMessage{"strict": json.RawMessage("true")}, c.Kwargs)
	assert.Contains(t, res.Text, `Call resume_python with run_id "`+res.Paused.RunID+`"`)
	assert.Equal(t, agent.ResumeToolName, e.ResumeTool().Name)
	if tools := e.Tools(); assert.Len(t, tools, 2) {
		assert.Equal(t, agent.ToolName, tools[0].Name)
		assert.Equal(t, agent.ResumeToolName, tools[1].Name)
	}
	// The result shows one run id, the one Resume takes.
	assert.Equal(t, res.Paused.RunID, res.RunID)
	assert.NotEqual(t, res.RunID, res.EventRunID)
	assert.Empty(t, res.SessionID)

	for name, raw := range map[string]string{
		"not json":     `{`,
		"no run id":    `{"results": []}`,
		"unknown call": `{"run_id": "` + res.Paused.RunID + `", "results": [{"id": "7", "value": 1}]}`,
		"unknown run":  `{"run_id": "nope", "results": [{"id": "0", "value": 1}]}`,
	} {
		_, err := e.Resume(ctx, "conv", json.RawMessage(raw))
		assert.ErrorIs(t, err, agent.ErrBadArgs, name)
		assert.True(t, strings.HasPrefix(err.Error(), "agent: bad resume_python arguments: "), err.Error())
	}
	res, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "`+res.Paused.RunID+`", "results": [{"id": "`+c.ID+`", "error": {"type": "ValueError", "message": "refused"}}]}`))
	require.NoError(t, err)
	require.Nil(t, res.Paused)
	assert.Equal(t, "'no: refused'", res.Text)

	_, err = e.Execute(ctx, "conv", json.RawMessage(`{"code": "1", "client_tools": [{"name": "not a name"}]}`))
	assert.ErrorIs(t, err, agent.ErrBadArgs)
}

// A resume of a run that is not paused is told in the caller's ids: its
// run_id and session_id, never the store's id of the session.
func TestResumeRefusalNamesCallersIDs(t *testing.T) {
	ctx := context.Background()
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	args, _ := json.Marshal(map[string]any{"code": "ask()", "session_id": "ct", "client_tools": []map[string]any{{"name": "ask"}}})
	res, err := e.Execute(ctx, "conv", args)
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.Equal(t, "ct", res.SessionID)
	assert.Equal(t, "conv/ct", res.StoreID)

	// The run is in session "ct": without session_id it is not found.
	_, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "`+res.RunID+`", "results": [{"id": "0", "value": 1}]}`))
	require.ErrorIs(t, err, session.ErrRunNotPaused)
	assert.Equal(t, `agent: bad resume_python arguments: run_id "`+res.RunID+`" is not paused in the conversation's session: `+
		`it was resumed already, abandoned after expiring, or never made there (a named session's run needs the same session_id as the call that paused)`, err.Error())
	_, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "abc", "session_id": "ct", "results": [{"id": "0", "value": 1}]}`))
	require.ErrorIs(t, err, session.ErrRunNotPaused)
	assert.Contains(t, err.Error(), `run_id "abc" is not paused in session_id "ct"`)
	assert.NotContains(t, err.Error(), "conv/ct")

	res, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "`+res.RunID+`", "session_id": "ct", "results": [{"id": "0", "value": 1}]}`))
	require.NoError(t, err)
	assert.Equal(t, "1", res.Text)
	assert.Empty(t, res.RunID)
}
