package montygenkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montygenkit "github.com/monty-go/monty/session/agent/adapters/genkit"
	"github.com/monty-go/monty/session/store/memstore"
)

// newAdapter returns an adapter over an executor whose registry offers
// double(n) and whose sessions live in memory.
func newAdapter(t *testing.T) (*montygenkit.Adapter, *agent.Executor) {
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
	return montygenkit.New(exec), exec
}

// scriptedModel is a Genkit model, defined with genkit.DefineModel, that
// answers each request with the next of its replies (a message, or a
// function of the request that makes one) and keeps the requests for the
// test to check.
type scriptedModel struct {
	model    ai.Model
	mu       sync.Mutex
	replies  []func(req *ai.ModelRequest) *ai.Message
	requests []*ai.ModelRequest
}

// newModel defines a scripted model in a Genkit with no plugins.
func newModel(t *testing.T) (*genkit.Genkit, *scriptedModel) {
	t.Helper()
	g := genkit.Init(context.Background())
	m := &scriptedModel{}
	m.model = genkit.DefineModel(g, "test/scripted", &ai.ModelOptions{
		Supports: &ai.ModelSupports{Multiturn: true, Tools: true, SystemRole: true},
	}, func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.requests = append(m.requests, req)
		if len(m.replies) == 0 {
			return nil, errors.New("no reply queued")
		}
		next := m.replies[0]
		m.replies = m.replies[1:]
		return &ai.ModelResponse{Request: req, Message: next(req), FinishReason: ai.FinishReasonStop}, nil
	})
	return g, m
}

// reply queues replies.
func (m *scriptedModel) reply(msgs ...*ai.Message) {
	for _, msg := range msgs {
		m.replyWith(func(*ai.ModelRequest) *ai.Message { return msg })
	}
}

// replyWith queues a reply made from the request it answers.
func (m *scriptedModel) replyWith(fn func(req *ai.ModelRequest) *ai.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, fn)
}

// request returns the i-th request the model received.
func (m *scriptedModel) request(t *testing.T, i int) *ai.ModelRequest {
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

// code is execute_python's input for code, as the model writes it.
func code(src string) map[string]any { return map[string]any{"code": src} }

// call is a tool request: ref, tool name, input.
type call struct {
	ref, name string
	input     any
}

// toolCalls is a model message that requests tools.
func toolCalls(calls ...call) *ai.Message {
	var parts []*ai.Part
	for _, c := range calls {
		parts = append(parts, ai.NewToolRequestPart(&ai.ToolRequest{Ref: c.ref, Name: c.name, Input: c.input}))
	}
	return ai.NewModelMessage(parts...)
}

// final is a model message that answers.
func final(text string) *ai.Message { return ai.NewModelTextMessage(text) }

// generate runs Genkit's generate loop over m with the adapter's tools
// for conversation.
func generate(ctx context.Context, g *genkit.Genkit, m *scriptedModel, ad *montygenkit.Adapter, conversation string, msgs ...*ai.Message) (*ai.ModelResponse, error) {
	return genkit.Generate(ctx, g,
		ai.WithModel(m.model),
		ai.WithMessages(msgs...),
		ai.WithTools(ad.Tools(conversation)...),
		ai.WithMaxTurns(10),
	)
}

// toolResponse finds the tool response with ref in a request (in the
// tool message that follows the model's requests) and returns its
// output, which must be a string.
func toolResponse(t *testing.T, req *ai.ModelRequest, ref string) string {
	t.Helper()
	for _, msg := range req.Messages {
		if msg.Role != ai.RoleTool {
			continue
		}
		for _, p := range msg.Content {
			if p.IsToolResponse() && p.ToolResponse.Ref == ref {
				out, ok := p.ToolResponse.Output.(string)
				require.True(t, ok, "output of %s is %T", ref, p.ToolResponse.Output)
				return out
			}
		}
	}
	t.Fatalf("no tool response for %s in %v", ref, req.Messages)
	return ""
}

func TestToolDefinitionsReachTheModel(t *testing.T) {
	ad, exec := newAdapter(t)
	g, m := newModel(t)
	m.reply(final("Hello."))
	resp, err := generate(context.Background(), g, m, ad, "c0", ai.NewUserTextMessage("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello.", resp.Text())

	tools := m.request(t, 0).Tools
	require.Len(t, tools, 2)
	for i, want := range []agent.Tool{exec.Tool(), exec.ResumeTool()} {
		got := tools[i]
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Description, got.Description)
		gotSchema, err := json.Marshal(got.InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, string(want.Parameters), string(gotSchema))
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, tools[0].Description, "double")
	for _, ref := range ad.Tools("c0") {
		_, ok := ref.(ai.Tool)
		assert.True(t, ok)
	}
}

func TestGoFunction(t *testing.T) {
	ad, _ := newAdapter(t)
	g, m := newModel(t)
	m.reply(
		toolCalls(call{"call_go", agent.ToolName, code("print('double is', double(21))")}),
		final("Double 21 is 42."),
	)
	resp, err := generate(context.Background(), g, m, ad, "conv-go", ai.NewUserTextMessage("What is double 21?"))
	require.NoError(t, err)
	assert.Equal(t, "Double 21 is 42.", resp.Text())
	require.Equal(t, 2, m.count())
	msgs := m.request(t, 1).Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, ai.RoleModel, msgs[1].Role)
	assert.Equal(t, ai.RoleTool, msgs[2].Role)
	require.Len(t, msgs[2].Content, 1)
	tr := msgs[2].Content[0].ToolResponse
	require.NotNil(t, tr)
	assert.Equal(t, "call_go", tr.Ref)
	assert.Equal(t, agent.ToolName, tr.Name)
	out := toolResponse(t, m.request(t, 1), "call_go")
	assert.Contains(t, out, "[double returned 42]")
	assert.Contains(t, out, "double is 42")
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := newAdapter(t)
	g, m := newModel(t)
	ctx := context.Background()

	// Turn 1 of conversation A sets a variable.
	m.reply(
		toolCalls(call{"call_set", agent.ToolName, code("secret = double(20) + 2\nprint('set')")}),
		final("Stored."),
	)
	resp, err := generate(ctx, g, m, ad, "conv-a", ai.NewUserTextMessage("Remember a number."))
	require.NoError(t, err)
	assert.Equal(t, "Stored.", resp.Text())
	assert.Contains(t, toolResponse(t, m.request(t, 1), "call_set"), "set")

	// Turn 2 of conversation A reads it.
	m.reply(
		toolCalls(call{"call_get", agent.ToolName, code("secret * 10")}),
		final("It is 420."),
	)
	history := append(resp.History(), ai.NewUserTextMessage("What is ten times it?"))
	resp, err = generate(ctx, g, m, ad, "conv-a", history...)
	require.NoError(t, err)
	assert.Equal(t, "It is 420.", resp.Text())
	assert.Equal(t, "420", toolResponse(t, m.request(t, 3), "call_get"))

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	m.reply(
		toolCalls(call{"call_other", agent.ToolName, code("secret")}),
		final("There is no number here."),
	)
	resp, err = generate(ctx, g, m, ad, "conv-b", ai.NewUserTextMessage("What number did I give you?"))
	require.NoError(t, err)
	assert.Equal(t, "There is no number here.", resp.Text())
	out := toolResponse(t, m.request(t, 5), "call_other")
	assert.Contains(t, out, "NameError")
	assert.Contains(t, out, "secret")
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := newAdapter(t)
	g, m := newModel(t)
	m.reply(
		toolCalls(call{"call_div", agent.ToolName, code("total = 10\ntotal / 0")}),
		toolCalls(call{"call_raise", agent.ToolName, code("raise ValueError('no such order: 7')")}),
		toolCalls(call{"call_fix", agent.ToolName, code("total = 10\ntotal / 4")}),
		final("It is 2.5."),
	)
	resp, err := generate(context.Background(), g, m, ad, "conv-err", ai.NewUserTextMessage("Divide."))
	require.NoError(t, err)
	assert.Equal(t, "It is 2.5.", resp.Text())
	require.Equal(t, 4, m.count())
	out := toolResponse(t, m.request(t, 1), "call_div")
	assert.Contains(t, out, "Traceback")
	assert.Contains(t, out, "ZeroDivisionError")
	assert.Contains(t, toolResponse(t, m.request(t, 2), "call_raise"), "ValueError: no such order: 7")
	// The loop goes on, and the session is usable.
	assert.Equal(t, "2.5", toolResponse(t, m.request(t, 3), "call_fix"))
}

// Arguments that fit the schema but that the executor refuses, and a
// statement with no value, are tool output; Call answers a tool name it
// does not know.
func TestRefusedArgumentsAndUnknownTool(t *testing.T) {
	ad, _ := newAdapter(t)
	g, m := newModel(t)
	m.reply(
		toolCalls(call{"call_1", agent.ToolName, code("n = 5")}),
		toolCalls(call{"call_2", agent.ResumeToolName, map[string]any{"run_id": "nope", "results": []any{}}}),
		toolCalls(call{"call_3", agent.ToolName, code("double(n)")}),
		final("Done."),
	)
	resp, err := generate(context.Background(), g, m, ad, "conv-many", ai.NewUserTextMessage("Go."))
	require.NoError(t, err)
	assert.Equal(t, "Done.", resp.Text())
	assert.Equal(t, montygenkit.NoOutput, toolResponse(t, m.request(t, 1), "call_1"))
	assert.Contains(t, toolResponse(t, m.request(t, 2), "call_2"), `run_id "nope" is not paused`)
	assert.Equal(t, "[double returned 10]\n10", toolResponse(t, m.request(t, 3), "call_3"))

	out, err := ad.Call(context.Background(), "conv-many", "search_web", `{"q": "monty"}`)
	require.NoError(t, err)
	assert.Contains(t, out, `Unknown tool "search_web"`)
	out, err = ad.Call(context.Background(), "conv-many", agent.ToolName, `{"source": "n"}`)
	require.NoError(t, err)
	assert.Contains(t, out, `"code" is required`)
}

// Genkit checks a request's input against the tool's input schema (the
// executor's) before the tool runs, and ends the loop when it does not
// fit; the adapter documents this.
func TestGenkitRefusesInputOutsideTheSchema(t *testing.T) {
	ad, _ := newAdapter(t)
	g, m := newModel(t)
	m.reply(toolCalls(call{"call_bad", agent.ToolName, map[string]any{"source": "n"}}), final("unreachable"))
	_, err := generate(context.Background(), g, m, ad, "conv-bad", ai.NewUserTextMessage("Go."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "code")
	assert.Equal(t, 1, m.count())
}

// A run paused at a client tool goes on when the model calls
// resume_python, both through Genkit in the conversation's session; the
// model reads run_id and the call's id from the paused result.
func TestPauseAndResume(t *testing.T) {
	ad, _ := newAdapter(t)
	g, m := newModel(t)
	var paused string
	m.reply(toolCalls(call{"call_run", agent.ToolName, map[string]any{
		"code":         "city = ask_user('Which city?')\ncity.upper()",
		"client_tools": []any{map[string]any{"name": "ask_user"}},
	}}))
	m.replyWith(func(req *ai.ModelRequest) *ai.Message {
		last := req.Messages[len(req.Messages)-1]
		if len(last.Content) == 1 && last.Content[0].IsToolResponse() {
			paused, _ = last.Content[0].ToolResponse.Output.(string)
		}
		runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(paused)
		callID := regexp.MustCompile(`- id "([^"]+)": ask_user\('Which city\?'\)`).FindStringSubmatch(paused)
		if runID == nil || callID == nil {
			return final("The run did not pause.")
		}
		return toolCalls(call{"call_resume", agent.ResumeToolName, map[string]any{
			"run_id": runID[1], "results": []any{map[string]any{"id": callID[1], "value": "Paris"}},
		}})
	})
	m.reply(final("PARIS it is."))

	resp, err := generate(context.Background(), g, m, ad, "conv-pause", ai.NewUserTextMessage("Shout my city."))
	require.NoError(t, err)
	assert.Equal(t, "PARIS it is.", resp.Text())
	require.Equal(t, 3, m.count())
	assert.Contains(t, paused, "ask_user")
	assert.Equal(t, "'PARIS'", toolResponse(t, m.request(t, 2), "call_resume"))
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := newAdapter(t)
	ctx := context.Background()

	// A conversation key that is no thread key: the call fails, and the
	// loop ends.
	for _, key := range []string{"", "a/b", "../x"} {
		g, m := newModel(t)
		m.reply(toolCalls(call{"call_1", agent.ToolName, code("1")}), final("unreachable"))
		_, err := generate(ctx, g, m, ad, key, ai.NewUserTextMessage("Go."))
		require.Error(t, err, "key %q", key)
		assert.Contains(t, err.Error(), "conversation key", "key %q", key)
		assert.Equal(t, 1, m.count(), "key %q", key)

		run := ad.Tools(key)[0].(ai.Tool)
		out, err := run.RunRaw(ctx, code("1"))
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		assert.Nil(t, out)
		_, err = ad.Call(ctx, key, agent.ToolName, `{"code": "1"}`)
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
	}

	// The caller's context ends while the model answers: the tool call
	// ends the loop, and the model is not asked again.
	cause := errors.New("the user left")
	runCtx, cancel := context.WithCancelCause(ctx)
	g, m := newModel(t)
	m.replyWith(func(*ai.ModelRequest) *ai.Message {
		cancel(cause)
		return toolCalls(call{"call_1", agent.ToolName, code("1 + 1")})
	})
	m.reply(final("unreachable"))
	_, err := generate(runCtx, g, m, ad, "ok", ai.NewUserTextMessage("Go."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), cause.Error())
	assert.Equal(t, 1, m.count())
	run := ad.Tools("ok")[0].(ai.Tool)
	// The executor may see the context end at different points of the
	// call (it races with taking the session's turn): each must give the
	// cause.
	for range 50 {
		_, err = run.RunRaw(runCtx, code("1"))
		require.ErrorIs(t, err, cause)
	}
	canceled, stop := context.WithCancel(ctx)
	stop()
	_, err = ad.Call(canceled, "ok", agent.ToolName, `{"code": "1"}`)
	assert.ErrorIs(t, err, context.Canceled)

	// The executor is closed: the loop ends with the error.
	g, m = newModel(t)
	m.reply(toolCalls(call{"call_1", agent.ToolName, code("1 + 1")}), final("unreachable"))
	exec.Close()
	_, err = generate(ctx, g, m, ad, "closed", ai.NewUserTextMessage("Go."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), session.ErrClosed.Error())
	assert.Equal(t, 1, m.count())
	_, err = ad.Call(ctx, "closed", agent.ToolName, `{"code": "1"}`)
	assert.ErrorIs(t, err, session.ErrClosed)
}

// Conversations run in parallel, each in its own session, through one
// Genkit and one model.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := newAdapter(t)
	g := genkit.Init(context.Background())
	const n = 4
	models := make([]*scriptedModel, n)
	for i := range models {
		m := &scriptedModel{}
		m.model = genkit.DefineModel(g, fmt.Sprintf("test/par-%d", i), &ai.ModelOptions{
			Supports: &ai.ModelSupports{Multiturn: true, Tools: true},
		}, func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.requests = append(m.requests, req)
			if len(m.replies) == 0 {
				return nil, errors.New("no reply queued")
			}
			next := m.replies[0]
			m.replies = m.replies[1:]
			return &ai.ModelResponse{Request: req, Message: next(req)}, nil
		})
		m.reply(
			toolCalls(call{"call_set", agent.ToolName, code(fmt.Sprintf("v = %d", i))}),
			toolCalls(call{"call_get", agent.ToolName, code("v * 100")}),
			final("Done."),
		)
		models[i] = m
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	answers := make([]string, n)
	for i, m := range models {
		wg.Go(func() {
			resp, err := generate(context.Background(), g, m, ad, fmt.Sprintf("par-%d", i), ai.NewUserTextMessage("Go."))
			if err == nil {
				answers[i] = resp.Text()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, m := range models {
		require.NoError(t, errs[i], "par-%d", i)
		assert.Equal(t, "Done.", answers[i])
		assert.Equal(t, fmt.Sprint(i*100), toolResponse(t, m.request(t, 2), "call_get"), "par-%d", i)
	}
}
