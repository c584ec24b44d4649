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
	"github.com/monty-go/monty/session/tools"
)

// The answer to a call is the executor's; its errors begin with the
// adapter's name and still match what they matched.
func TestAdapterAnswer(t *testing.T) {
	ctx := context.Background()
	keeper := agenttest.Keeper(t, memstore.New(memstore.Options{}))
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Keeper: keeper})
	a := agent.Adapter{Exec: e, Name: "montytest"}

	text, failed, err := a.Answer(ctx, "conv", agent.ToolName, agenttest.CodeArgs("x = 6\nx * 7"))
	require.NoError(t, err)
	assert.Equal(t, "42", text)
	assert.False(t, failed)
	text, failed, err = a.Answer(ctx, "conv", agent.ToolName, agenttest.CodeArgs("x // 0"))
	require.NoError(t, err)
	assert.Contains(t, text, "ZeroDivisionError")
	assert.True(t, failed)
	text, failed, err = a.Answer(ctx, "conv", "search_web", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Contains(t, text, `Unknown tool "search_web"`)
	assert.True(t, failed)

	_, _, err = a.Answer(ctx, "a/b", agent.ToolName, agenttest.CodeArgs("1"))
	require.ErrorIs(t, err, agent.ErrBadArgs)
	assert.Regexp(t, `^montytest: agent: conversation key: `, err.Error())

	cause := errors.New("the user left")
	cctx, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	text, failed, err = a.Answer(cctx, "conv", agent.ToolName, agenttest.CodeArgs("1"))
	require.ErrorIs(t, err, cause)
	assert.Regexp(t, `^montytest: agent: execute_python: `, err.Error())
	assert.Empty(t, text)
	assert.False(t, failed)

	keeper.Close()
	_, _, err = a.Answer(ctx, "conv", agent.ResumeToolName, json.RawMessage(`{"run_id": "r", "results": []}`))
	require.ErrorIs(t, err, session.ErrClosed)
	assert.Regexp(t, `^montytest: agent: resume_python: `, err.Error())
}

func TestAdapterCheckConversation(t *testing.T) {
	a := agent.Adapter{Exec: agenttest.NewExecutor(t, agent.ExecutorOptions{}), Name: "montytest"}
	for _, key := range []string{"conv-1", "user.42:chat_7"} {
		assert.NoError(t, a.CheckConversation(key), "key %q", key)
	}
	for _, key := range []string{"", "a/b", "../x"} {
		err := a.CheckConversation(key)
		require.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		assert.Regexp(t, `^montytest: conversation key: `, err.Error())
	}
}

func TestAdapterDefinitions(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	a := agent.Adapter{Exec: e, Name: "montytest"}
	assert.Equal(t, e.Tools(), a.Tools())
	assert.Equal(t, []string{agent.ToolName, agent.ResumeToolName}, []string{a.Tools()[0].Name, a.Tools()[1].Name})
	assert.Equal(t, e.Tool(), a.Definition(agent.ToolName))
	assert.Equal(t, e.ResumeTool(), a.Definition(agent.ResumeToolName))
	assert.Contains(t, a.Definition(agent.ToolName).Description, "get_weather", "the briefing as it is now")
	assert.PanicsWithValue(t, `montytest: no tool "search_web": the tools are execute_python and resume_python`,
		func() { a.Definition("search_web") })
}

// A schema comes whole, every keyword, and each caller gets a copy of its
// own; parameters that are no JSON object panic.
func TestAdapterSchema(t *testing.T) {
	a := agent.Adapter{Name: "montytest"}
	want := `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],` +
		`"additionalProperties":false,"$defs":{"x":{"type":"integer"}}}`
	tool := tools.Tool{Name: "t", Parameters: json.RawMessage(want)}
	s := a.Schema(tool)
	got, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, want, string(got))
	s["type"] = "changed"
	assert.Equal(t, "object", a.Schema(tool)["type"])

	for _, bad := range []string{`[]`, `null`, `{`} {
		assert.Panics(t, func() { a.Schema(tools.Tool{Name: "t", Parameters: json.RawMessage(bad)}) }, bad)
	}
	assert.PanicsWithValue(t, "montytest: t: parameters are not a JSON object: null",
		func() { a.Schema(tools.Tool{Name: "t", Parameters: json.RawMessage(`null`)}) })
}
