package montyeino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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
	"github.com/monty-go/monty/session/store/memstore"
)

// newAdapter returns an adapter over an executor whose registry offers
// double(n) and whose sessions live in memory.
func newAdapter(t *testing.T) (*montyeino.Adapter, *agent.Executor) {
	t.Helper()
	double := agent.MustFunc(agent.Schema{
		Name:        "double",
		Description: "Double a number.",
		Params:      []agent.Param{{Name: "n", Description: "the number"}},
	}, func(n int) (int, error) { return 2 * n, nil })
	fns, err := agent.NewRegistry(double)
	require.NoError(t, err)
	exec, err := agent.NewExecutor(agent.ExecutorOptions{
		Session:   session.Options{Store: memstore.New(memstore.Options{})},
		Functions: fns,
	})
	require.NoError(t, err)
	t.Cleanup(exec.Close)
	return montyeino.New(exec), exec
}

// scriptedModel is an Eino tool-calling chat model that answers each
// request with the next of its replies (a message, or a function of the
// request that makes one) and keeps the requests and the tools bound to
// it for the test to check.
type scriptedModel struct {
	mu       sync.Mutex
	replies  []func(input []*schema.Message) *schema.Message
	requests [][]*schema.Message
	tools    []*schema.ToolInfo
}

var _ model.ToolCallingChatModel = (*scriptedModel)(nil)

// reply queues replies.
func (m *scriptedModel) reply(msgs ...*schema.Message) {
	for _, msg := range msgs {
		m.replyWith(func([]*schema.Message) *schema.Message { return msg })
	}
}

// replyWith queues a reply made from the request it answers.
func (m *scriptedModel) replyWith(fn func(input []*schema.Message) *schema.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, fn)
}

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, append([]*schema.Message(nil), input...))
	if len(m.replies) == 0 {
		return nil, errors.New("no reply queued")
	}
	next := m.replies[0]
	m.replies = m.replies[1:]
	return next(input), nil
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

// request returns the i-th request the model received.
func (m *scriptedModel) request(t *testing.T, i int) []*schema.Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Less(t, i, len(m.requests), "requests received")
	return m.requests[i]
}

func (m *scriptedModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// args is execute_python's arguments for code, as the model writes them.
func args(code string) string {
	b, _ := json.Marshal(map[string]string{"code": code})
	return string(b)
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
	ad, exec := newAdapter(t)
	m := &scriptedModel{}
	m.reply(final("Hello."))
	answer, err := newAgent(t, ad, m, "c0").Generate(context.Background(), []*schema.Message{schema.UserMessage("hi")})
	require.NoError(t, err)
	assert.Equal(t, "Hello.", answer.Content)

	require.Len(t, m.tools, 2)
	for i, want := range []agent.Tool{exec.Tool(), exec.ResumeTool()} {
		got := m.tools[i]
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Description, got.Desc)
		js, err := got.ToJSONSchema()
		require.NoError(t, err)
		gotSchema, err := json.Marshal(js)
		require.NoError(t, err)
		var wantSchema any
		require.NoError(t, json.Unmarshal(want.Parameters, &wantSchema))
		wantJSON, err := json.Marshal(emptyAsTrue(wantSchema))
		require.NoError(t, err)
		assert.JSONEq(t, string(wantJSON), string(gotSchema))
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, m.tools[0].Desc, "double")
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
	ad, _ := newAdapter(t)
	m := &scriptedModel{}
	m.reply(
		toolCalls(call{"call_go", agent.ToolName, args("print('double is', double(21))")}),
		final("Double 21 is 42."),
	)
	answer, err := newAgent(t, ad, m, "conv-go").Generate(context.Background(), []*schema.Message{schema.UserMessage("What is double 21?")})
	require.NoError(t, err)
	assert.Equal(t, "Double 21 is 42.", answer.Content)
	require.Equal(t, 2, m.count())
	req := m.request(t, 1)
	require.Len(t, req, 3)
	assert.Equal(t, schema.Assistant, req[1].Role)
	require.Len(t, req[1].ToolCalls, 1)
	assert.Equal(t, "call_go", req[1].ToolCalls[0].ID)
	assert.Equal(t, schema.Tool, req[2].Role)
	assert.Equal(t, "call_go", req[2].ToolCallID)
	assert.Contains(t, req[2].Content, "[double returned 42]")
	assert.Contains(t, req[2].Content, "double is 42")
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := newAdapter(t)
	ctx := context.Background()
	m := &scriptedModel{}
	convA := newAgent(t, ad, m, "conv-a")

	// Turn 1 of conversation A sets a variable.
	m.reply(
		toolCalls(call{"call_set", agent.ToolName, args("secret = double(20) + 2\nprint('set')")}),
		final("Stored."),
	)
	history := []*schema.Message{schema.UserMessage("Remember a number.")}
	answer, err := convA.Generate(ctx, history)
	require.NoError(t, err)
	assert.Equal(t, "Stored.", answer.Content)
	assert.Contains(t, toolMessage(t, m.request(t, 1), "call_set"), "set")

	// Turn 2 of conversation A reads it.
	m.reply(
		toolCalls(call{"call_get", agent.ToolName, args("secret * 10")}),
		final("It is 420."),
	)
	history = append(history, answer, schema.UserMessage("What is ten times it?"))
	answer, err = convA.Generate(ctx, history)
	require.NoError(t, err)
	assert.Equal(t, "It is 420.", answer.Content)
	assert.Equal(t, "420", toolMessage(t, m.request(t, 3), "call_get"))

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	m.reply(
		toolCalls(call{"call_other", agent.ToolName, args("secret")}),
		final("There is no number here."),
	)
	answer, err = newAgent(t, ad, m, "conv-b").Generate(ctx, []*schema.Message{schema.UserMessage("What number did I give you?")})
	require.NoError(t, err)
	assert.Equal(t, "There is no number here.", answer.Content)
	out := toolMessage(t, m.request(t, 5), "call_other")
	assert.Contains(t, out, "NameError")
	assert.Contains(t, out, "secret")
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := newAdapter(t)
	m := &scriptedModel{}
	m.reply(
		toolCalls(call{"call_div", agent.ToolName, args("total = 10\ntotal / 0")}),
		toolCalls(call{"call_raise", agent.ToolName, args("raise ValueError('no such order: 7')")}),
		toolCalls(call{"call_fix", agent.ToolName, args("total = 10\ntotal / 4")}),
		final("It is 2.5."),
	)
	answer, err := newAgent(t, ad, m, "conv-err").Generate(context.Background(), []*schema.Message{schema.UserMessage("Divide.")})
	require.NoError(t, err)
	assert.Equal(t, "It is 2.5.", answer.Content)
	require.Equal(t, 4, m.count())
	out := toolMessage(t, m.request(t, 1), "call_div")
	assert.Contains(t, out, "Traceback")
	assert.Contains(t, out, "ZeroDivisionError")
	assert.Contains(t, toolMessage(t, m.request(t, 2), "call_raise"), "ValueError: no such order: 7")
	// The loop goes on, and the session is usable.
	assert.Equal(t, "2.5", toolMessage(t, m.request(t, 3), "call_fix"))
}

// Several calls in one message through a tools node in a graph of our
// own: bad arguments, a resume of no run and a tool the node does not
// have (answered by the adapter as the node's unknown tools handler) are
// all tool output.
func TestSeveralCallsBadArgumentsAndUnknownTool(t *testing.T) {
	ad, _ := newAdapter(t)
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

	out, err := run.Invoke(ctx, toolCalls(
		call{"call_1", agent.ToolName, args("n = 5")},
		call{"call_2", agent.ToolName, args("n + 1")},
		call{"call_3", agent.ToolName, `{"source": "n"}`},
		call{"call_4", "search_web", `{"q": "monty"}`},
		call{"call_5", agent.ResumeToolName, `{"run_id": "nope", "results": []}`},
		call{"call_6", agent.ToolName, args("double(n)")},
	))
	require.NoError(t, err)
	require.Len(t, out, 6)
	for i, c := range []struct{ id, want string }{
		{"call_1", montyeino.NoOutput},
		{"call_2", "6"},
		{"call_3", `"code" is required`},
		{"call_4", `Unknown tool "search_web"`},
		{"call_5", `run_id "nope" is not paused`},
		{"call_6", "10"},
	} {
		assert.Equal(t, schema.Tool, out[i].Role, c.id)
		assert.Equal(t, c.id, out[i].ToolCallID)
		assert.Contains(t, out[i].Content, c.want, c.id)
	}
}

// A run paused at a client tool goes on when the model calls
// resume_python, both through the agent in the conversation's session;
// the model reads run_id and the call's id from the paused result.
func TestPauseAndResume(t *testing.T) {
	ad, _ := newAdapter(t)
	m := &scriptedModel{}
	var paused string
	m.reply(toolCalls(call{"call_run", agent.ToolName,
		`{"code": "city = ask_user('Which city?')\ncity.upper()", "client_tools": [{"name": "ask_user"}]}`}))
	m.replyWith(func(input []*schema.Message) *schema.Message {
		last := input[len(input)-1]
		if last.ToolCallID == "call_run" {
			paused = last.Content
		}
		runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(paused)
		callID := regexp.MustCompile(`- id "([^"]+)": ask_user\('Which city\?'\)`).FindStringSubmatch(paused)
		if runID == nil || callID == nil {
			return final("The run did not pause.")
		}
		res, _ := json.Marshal(map[string]any{"run_id": runID[1], "results": []any{map[string]any{"id": callID[1], "value": "Paris"}}})
		return toolCalls(call{"call_resume", agent.ResumeToolName, string(res)})
	})
	m.reply(final("PARIS it is."))

	answer, err := newAgent(t, ad, m, "conv-pause").Generate(context.Background(), []*schema.Message{schema.UserMessage("Shout my city.")})
	require.NoError(t, err)
	assert.Equal(t, "PARIS it is.", answer.Content)
	require.Equal(t, 3, m.count())
	assert.Contains(t, paused, "ask_user")
	assert.Equal(t, "'PARIS'", toolMessage(t, m.request(t, 2), "call_resume"))
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := newAdapter(t)
	ctx := context.Background()

	// A conversation key that is no thread key: the agent is not built,
	// and a call fails.
	for _, key := range []string{"", "a/b", "../x"} {
		_, err := react.NewAgent(ctx, &react.AgentConfig{
			ToolCallingModel: &scriptedModel{},
			ToolsConfig:      compose.ToolsNodeConfig{Tools: ad.Tools(key)},
		})
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		run := ad.Tools(key)[0].(tool.InvokableTool)
		out, err := run.InvokableRun(ctx, args("1"))
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		assert.Empty(t, out)
	}

	// The caller's context ends while the model answers: the tool call
	// ends the run with the cause, and the model is not asked again.
	cause := errors.New("the user left")
	runCtx, cancel := context.WithCancelCause(ctx)
	m := &scriptedModel{}
	m.replyWith(func([]*schema.Message) *schema.Message {
		cancel(cause)
		return toolCalls(call{"call_1", agent.ToolName, args("1 + 1")})
	})
	m.reply(final("unreachable"))
	_, err := newAgent(t, ad, m, "ok").Generate(runCtx, []*schema.Message{schema.UserMessage("Go.")})
	require.Error(t, err)
	assert.Equal(t, 1, m.count())
	run := ad.Tools("ok")[0].(tool.InvokableTool)
	// The executor may see the context end at different points of the
	// call (it races with taking the session's turn): each must give the
	// cause.
	for range 50 {
		_, err = run.InvokableRun(runCtx, args("1"))
		require.ErrorIs(t, err, cause)
	}
	canceled, stop := context.WithCancel(ctx)
	stop()
	_, err = run.InvokableRun(canceled, args("1"))
	assert.ErrorIs(t, err, context.Canceled)

	// The executor is closed: the run ends with the error.
	m = &scriptedModel{}
	m.reply(toolCalls(call{"call_1", agent.ToolName, args("1 + 1")}), final("unreachable"))
	closedAgent := newAgent(t, ad, m, "closed")
	exec.Close()
	_, err = closedAgent.Generate(ctx, []*schema.Message{schema.UserMessage("Go.")})
	assert.True(t, errors.Is(err, session.ErrClosed), "%v", err)
	assert.Equal(t, 1, m.count())
}

// Conversations run in parallel, each in its own session, each with its
// own agent.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := newAdapter(t)
	models := make([]*scriptedModel, 4)
	agents := make([]*react.Agent, len(models))
	for i := range models {
		models[i] = &scriptedModel{}
		models[i].reply(
			toolCalls(call{"call_set", agent.ToolName, args(fmt.Sprintf("v = %d", i))}),
			toolCalls(call{"call_get", agent.ToolName, args("v * 100")}),
			final("Done."),
		)
		agents[i] = newAgent(t, ad, models[i], fmt.Sprintf("par-%d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(models))
	answers := make([]string, len(models))
	for i, a := range agents {
		wg.Go(func() {
			msg, err := a.Generate(context.Background(), []*schema.Message{schema.UserMessage("Go.")})
			if err == nil {
				answers[i] = msg.Content
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, m := range models {
		require.NoError(t, errs[i], "par-%d", i)
		assert.Equal(t, "Done.", answers[i])
		assert.Equal(t, fmt.Sprint(i*100), toolMessage(t, m.request(t, 2), "call_get"), "par-%d", i)
	}
}
