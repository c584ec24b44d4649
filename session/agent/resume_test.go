package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/agent"
)

// TestExecutorClientTools: execute_python with client_tools pauses at
// their calls (Result.Paused, and Text says how to answer); Resume
// continues the run; results that do not fit the run are ErrBadArgs.
func TestExecutorClientTools(t *testing.T) {
	ctx := context.Background()
	e := newExecutor(t, agent.ExecutorOptions{})
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

	for name, raw := range map[string]string{
		"not json":     `{`,
		"no run id":    `{"results": []}`,
		"unknown call": `{"run_id": "` + res.Paused.RunID + `", "results": [{"id": "7", "value": 1}]}`,
		"unknown run":  `{"run_id": "nope", "results": [{"id": "0", "value": 1}]}`,
	} {
		_, err := e.Resume(ctx, "conv", json.RawMessage(raw))
		assert.ErrorIs(t, err, agent.ErrBadArgs, name)
	}
	res, err = e.Resume(ctx, "conv", json.RawMessage(`{"run_id": "`+res.Paused.RunID+`", "results": [{"id": "`+c.ID+`", "error": {"type": "ValueError", "message": "refused"}}]}`))
	require.NoError(t, err)
	require.Nil(t, res.Paused)
	assert.Equal(t, "'no: refused'", res.Text)

	_, err = e.Execute(ctx, "conv", json.RawMessage(`{"code": "1", "client_tools": [{"name": "not a name"}]}`))
	assert.ErrorIs(t, err, agent.ErrBadArgs)
}
