package montyeino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montyeino "github.com/monty-go/monty/session/agent/adapters/eino"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// scriptedModel is an Eino tool-calling chat model that answers each
// request with the next reply of its script (a message, or a function of
// the request that makes one) and keeps the requests and the tools bound
// to it for the test to check.
type scriptedModel struct {
	agenttest.Script[[]*schema.Message, *schema.Message]

	mu    sync.Mutex
	tools []*schema.ToolInfo
}

var _ model.ToolCallingChatModel = (*scriptedModel)(nil)

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	msg, ok := m.Answer(append([]*schema.Message(nil), input...))
	if !ok {
		return nil, errors.New("no reply queued")
	}
	return msg, nil
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// WithTools records the tools the agent binds; the replies stay shared.
func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = tools
	return m, nil
}

// call is a tool call: {id, tool name, arguments}.
type call [3]string

// toolCalls is an assistant message that calls tools.
func toolCalls(calls ...call) *schema.Message {
	var tcs []schema.ToolCall
	for _, c := range calls {
		tcs = append(tcs, schema.ToolCall{ID: c[0], Type: "function",
			Function: schema.FunctionCall{Name: c[1], Arguments: c[2]}})
	}
	return schema.AssistantMessage("", tcs)
}

// final is an assistant message that answers.
func final(text string) *schema.Message { return schema.AssistantMessage(text, nil) }

// newAgent is a ReAct agent over m with the adapter's tools for
// conversation.
func newAgent(t *testing.T, ad *montyeino.Adapter, m *scriptedModel, conversation string) *react.Agent {
	t.Helper()
	a, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: ad.Tools(conversation), ExecuteSequentially: true},
	})
	require.NoError(t, err)
	return a
}

// toolMessage finds the tool message answering toolCallID in a request
// (they follow the assistant message that made the calls) and returns
// its content.
func toolMessage(t *testing.T, req []*schema.Message, toolCallID string) string {
	t.Helper()
	for _, msg := range req {
		if msg.Role == schema.Tool && msg.ToolCallID == toolCallID {
			return msg.Content
		}
	}
	t.Fatalf("no tool message for %s in %v", toolCallID, req)
	return ""
}

func TestToolInfoReachesTheModel(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montyeino.New)
	m := &scriptedModel{}
	m.Reply(final("Hello."))
	answer, err := newAgent(t, ad, m, "c0").Generate(context.Background(), []*schema.Message{schema.UserMessage("hi")})
	require.NoError(t, err)
	assert.Equal(t, "Hello.", answer.Content)

	require.Len(t, m.tools, 2)
	for i, want := range exec.Tools() {
		got := m.tools[i]
		js, err := got.ToJSONSchema()
		require.NoError(t, err)
		var wantSchema any
		require.NoError(t, json.Unmarshal(want.Parameters, &wantSchema))
		want.Parameters, err = json.Marshal(emptyAsTrue(wantSchema))
		require.NoError(t, err)
		agenttest.AssertTool(t, want, got.Name, got.Desc, js)
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, m.tools[0].Desc, agenttest.FuncName)
	// Each tool is an invokable tool.
	for _, bt := range ad.Tools("c0") {
		_, ok := bt.(tool.InvokableTool)
		assert.True(t, ok)
	}
}

// emptyAsTrue is a decoded JSON schema with its empty subschemas ({},
// any value) written as true, which means the same and is how Eino's
// schema type writes them.
func emptyAsTrue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			return true
		}
		for k, x := range v {
			v[k] = emptyAsTrue(x)
		}
	case []any:
		for i, x := range v {
			v[i] = emptyAsTrue(x)
		}
	}
	return v
}

func TestGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyeino.New)
	m := &scriptedModel{}
	m.Reply(
		toolCalls(call{"call_go", agent.ToolName, agenttest.Args(agenttest.CallDouble)}),
		final("Double 21 is 42."),
	)
	answer, err := newAgent(t, ad, m, "conv-go").Generate(context.Background(), []*schema.Message{schema.UserMessage("What is double 21?")})
	require.NoError(t, err)
	assert.Equal(t, "Double 21 is 42.", answer.Content)
	require.Equal(t, 2, m.Count())
	req := m.Request(t, 1)
	require.Len(t, req, 3)
	assert.Equal(t, schema.Assistant, req[1].Role)
	require.Len(t, req[1].ToolCalls, 1)
	assert.Equal(t, "call_go", req[1].ToolCalls[0].ID)
	assert.Equal(t, schema.Tool, req[2].Role)
	assert.Equal(t, "call_go", req[2].ToolCallID)
	agenttest.AssertDoubled(t, req[2].Content)
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyeino.New)
	ctx := context.Background()
	m := &scriptedModel{}
	convA := newAgent(t, ad, m, "conv-a")

	// Turn 1 of conversation A sets a variable.
	m.Reply(
		toolCalls(call{"call_set", agent.ToolName, agenttest.Args(agenttest.SetSecret)}),
		final("Stored."),
	)
	history := []*schema.Message{schema.UserMessage("Remember a number.")}
	answer, err := convA.Generate(ctx, history)
	require.NoError(t, err)
	assert.Equal(t, "Stored.", answer.Content)
	assert.Contains(t, toolMessage(t, m.Request(t, 1), "call_set"), "set")

	// Turn 2 of conversation A reads it.
	m.Reply(
		toolCalls(call{"call_get", agent.ToolName, agenttest.Args(agenttest.GetSecret)}),
		final("It is 420."),
	)
	history = append(history, answer, schema.UserMessage("What is ten times it?"))
	answer, err = convA.Generate(ctx, history)
	require.NoError(t, err)
	assert.Equal(t, "It is 420.", answer.Content)
	assert.Equal(t, agenttest.WantSecret, toolMessage(t, m.Request(t, 3), "call_get"))

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	m.Reply(
		toolCalls(call{"call_other", agent.ToolName, agenttest.Args(agenttest.ReadSecret)}),
		final("There is no number here."),
	)
	answer, err = newAgent(t, ad, m, "conv-b").Generate(ctx, []*schema.Message{schema.UserMessage("What number did I give you?")})
	require.NoError(t, err)
	assert.Equal(t, "There is no number here.", answer.Content)
	agenttest.AssertNameError(t, toolMessage(t, m.Request(t, 5), "call_other"))
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyeino.New)
	m := &scriptedModel{}
	m.Reply(
		toolCalls(call{"call_div", agent.ToolName, agenttest.Args(agenttest.DivideByZero)}),
		toolCalls(call{"call_raise", agent.ToolName, agenttest.Args(agenttest.Raise)}),
		toolCalls(call{"call_fix", agent.ToolName, agenttest.Args(agenttest.Divide)}),
		final("It is 2.5."),
	)
	answer, err := newAgent(t, ad, m, "conv-err").Generate(context.Background(), []*schema.Message{schema.UserMessage("Divide.")})
	require.NoError(t, err)
	assert.Equal(t, "It is 2.5.", answer.Content)
	require.Equal(t, 4, m.Count())
	agenttest.AssertTraceback(t, toolMessage(t, m.Request(t, 1), "call_div"), "ZeroDivisionError")
	assert.Contains(t, toolMessage(t, m.Request(t, 2), "call_raise"), agenttest.WantRaise)
	// The loop goes on, and the session is usable.
	assert.Equal(t, agenttest.WantDivide, toolMessage(t, m.Request(t, 3), "call_fix"))
}

// Several calls in one message through a tools node in a graph of our
// own: bad arguments, a resume of no run and a tool the node does not
// have (answered by the adapter as the node's unknown tools handler) are
// all tool output.
func TestSeveralCallsBadArgumentsAndUnknownTool(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyeino.New)
	ctx := context.Background()
	const conv = "conv-many"
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               ad.Tools(conv),
		ExecuteSequentially: true,
		UnknownToolsHandler: func(ctx context.Context, name, input string) (string, error) {
			return ad.Call(ctx, conv, name, input)
		},
	})
	require.NoError(t, err)
	chain := compose.NewChain[*schema.Message, []*schema.Message]().AppendToolsNode(node)
	run, err := chain.Compile(ctx)
	require.NoError(t, err)

	calls := agenttest.SeveralCalls()
	var tcs []call
	for _, c := range calls {
		tcs = append(tcs, call{c.ID, c.Name, c.Args})
	}
	out, err := run.Invoke(ctx, toolCalls(tcs...))
	require.NoError(t, err)
	require.Len(t, out, len(calls))
	for i, c := range calls {
		assert.Equal(t, schema.Tool, out[i].Role, c.ID)
		assert.Equal(t, c.ID, out[i].ToolCallID)
		c.AssertOutput(t, out[i].Content)
	}
}

// A run paused at a client tool goes on when the model calls
// resume_python, both through the agent in the conversation's session;
// the model reads run_id and the call's id from the paused result.
func TestPauseAndResume(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyeino.New)
	m := &scriptedModel{}
	var paused string
	m.Reply(toolCalls(call{"call_run", agent.ToolName, agenttest.PauseArgs}))
	m.ReplyWith(func(input []*schema.Message) *schema.Message {
		last := input[len(input)-1]
		if last.ToolCallID == "call_run" {
			paused = last.Content
		}
		res, ok := agenttest.ResumeArgs(paused)
		if !ok {
			return final("The run did not pause.")
		}
		return toolCalls(call{"call_resume", agent.ResumeToolName, res})
	})
	m.Reply(final("PARIS it is."))

	answer, err := newAgent(t, ad, m, "conv-pause").Generate(context.Background(), []*schema.Message{schema.UserMessage("Shout my city.")})
	require.NoError(t, err)
	assert.Equal(t, "PARIS it is.", answer.Content)
	require.Equal(t, 3, m.Count())
	assert.Contains(t, paused, "ask_user")
	assert.Equal(t, agenttest.WantResumed, toolMessage(t, m.Request(t, 2), "call_resume"))
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montyeino.New)
	ctx := context.Background()

	// A conversation key that is no thread key: the agent is not built.
	for _, key := range agenttest.BadConversationKeys() {
		_, err := react.NewAgent(ctx, &react.AgentConfig{
			ToolCallingModel: &scriptedModel{},
			ToolsConfig:      compose.ToolsNodeConfig{Tools: ad.Tools(key)},
		})
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
	}

	// The caller's context ends while the model answers: the tool call
	// ends the run with the cause, and the model is not asked again.
	cause := errors.New("the user left")
	runCtx, cancel := context.WithCancelCause(ctx)
	m := &scriptedModel{}
	m.ReplyWith(func([]*schema.Message) *schema.Message {
		cancel(cause)
		return toolCalls(call{"call_1", agent.ToolName, agenttest.Args("1 + 1")})
	})
	m.Reply(final("unreachable"))
	_, err := newAgent(t, ad, m, "ok").Generate(runCtx, []*schema.Message{schema.UserMessage("Go.")})
	require.Error(t, err)
	assert.Equal(t, 1, m.Count())

	// The tools and Call, on their own: a bad conversation key, a context
	// that ended, a closed keeper (CallerErrors closes it). No output
	// comes with the error.
	m = &scriptedModel{}
	m.Reply(toolCalls(call{"call_1", agent.ToolName, agenttest.Args("1 + 1")}), final("unreachable"))
	closedAgent := newAgent(t, ad, m, "closed")
	agenttest.CallerErrors(t, exec, "montyeino", func(ctx context.Context, conversation string) (any, error) {
		return ad.Tools(conversation)[0].(tool.InvokableTool).InvokableRun(ctx, agenttest.Args("1 + 1"))
	}, func(ctx context.Context, conversation string) (any, error) {
		return ad.Call(ctx, conversation, agent.ResumeToolName, agenttest.ResumeNothing)
	})

	// The executor's keeper is closed: the run ends with the error.
	_, err = closedAgent.Generate(ctx, []*schema.Message{schema.UserMessage("Go.")})
	assert.True(t, errors.Is(err, session.ErrClosed), "%v", err)
	assert.Equal(t, 1, m.Count())
}

// Conversations run in parallel, each in its own session, each with its
// own agent.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyeino.New)
	models := make([]*scriptedModel, 4)
	agents := make([]*react.Agent, len(models))
	for i := range models {
		models[i] = &scriptedModel{}
		models[i].Reply(
			toolCalls(call{"call_set", agent.ToolName, agenttest.Args(agenttest.SetV(i))}),
			toolCalls(call{"call_get", agent.ToolName, agenttest.Args(agenttest.GetV)}),
			final("Done."),
		)
		agents[i] = newAgent(t, ad, models[i], fmt.Sprintf("par-%d", i))
	}
	answers := make([]string, len(models))
	agenttest.Parallel(t, len(agents), func(i int, _ string) error {
		msg, err := agents[i].Generate(context.Background(), []*schema.Message{schema.UserMessage("Go.")})
		if err == nil {
			answers[i] = msg.Content
		}
		return err
	})
	for i, m := range models {
		assert.Equal(t, "Done.", answers[i])
		assert.Equal(t, agenttest.WantV(i), toolMessage(t, m.Request(t, 2), "call_get"), "par-%d", i)
	}
}
