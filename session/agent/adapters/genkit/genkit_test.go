package montygenkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montygenkit "github.com/monty-go/monty/session/agent/adapters/genkit"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// scriptedModel is a Genkit model, defined with genkit.DefineModel, that
// answers each request with the next of its replies (a message, or a
// function of the request that makes one) and keeps the requests for the
// test to check.
type scriptedModel struct {
	agenttest.Script[*ai.ModelRequest, *ai.Message]

	model ai.Model
}

// newModel defines a scripted model in a Genkit with no plugins.
func newModel(t *testing.T) (*genkit.Genkit, *scriptedModel) {
	t.Helper()
	g := genkit.Init(context.Background())
	m := defineModel(g, "test/scripted", &ai.ModelSupports{Multiturn: true, Tools: true, SystemRole: true}, ai.FinishReasonStop)
	return g, m
}

// defineModel defines a scripted model named name in g, which supports
// what supports says and ends its responses with finish.
func defineModel(g *genkit.Genkit, name string, supports *ai.ModelSupports, finish ai.FinishReason) *scriptedModel {
	m := &scriptedModel{}
	m.model = genkit.DefineModel(g, name, &ai.ModelOptions{Supports: supports},
		func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			msg, ok := m.Answer(req)
			if !ok {
				return nil, errors.New("no reply queued")
			}
			return &ai.ModelResponse{Request: req, Message: msg, FinishReason: finish}, nil
		})
	return m
}

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
	ad, exec := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	m.Reply(final("Hello."))
	resp, err := generate(context.Background(), g, m, ad, "c0", ai.NewUserTextMessage("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello.", resp.Text())

	// Genkit builds the request's tools from a map: find them by name.
	byName := map[string]*ai.ToolDefinition{}
	for _, def := range m.Request(t, 0).Tools {
		byName[def.Name] = def
	}
	require.Len(t, byName, 2)
	want := exec.Tools()
	for _, w := range want {
		def, ok := byName[w.Name]
		require.True(t, ok, "no tool %s reached the model", w.Name)
		agenttest.AssertTool(t, w, def.Name, def.Description, def.InputSchema)
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, byName[want[0].Name].Description, agenttest.FuncName)
	for _, ref := range ad.Tools("c0") {
		_, ok := ref.(ai.Tool)
		assert.True(t, ok)
	}
}

func TestGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	m.Reply(
		toolCalls(call{"call_go", agent.ToolName, agenttest.Input(agenttest.CallDouble)}),
		final("Double 21 is 42."),
	)
	resp, err := generate(context.Background(), g, m, ad, "conv-go", ai.NewUserTextMessage("What is double 21?"))
	require.NoError(t, err)
	assert.Equal(t, "Double 21 is 42.", resp.Text())
	require.Equal(t, 2, m.Count())
	msgs := m.Request(t, 1).Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, ai.RoleModel, msgs[1].Role)
	assert.Equal(t, ai.RoleTool, msgs[2].Role)
	require.Len(t, msgs[2].Content, 1)
	tr := msgs[2].Content[0].ToolResponse
	require.NotNil(t, tr)
	assert.Equal(t, "call_go", tr.Ref)
	assert.Equal(t, agent.ToolName, tr.Name)
	agenttest.AssertDoubled(t, toolResponse(t, m.Request(t, 1), "call_go"))
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	ctx := context.Background()

	// Turn 1 of conversation A sets a variable.
	m.Reply(
		toolCalls(call{"call_set", agent.ToolName, agenttest.Input(agenttest.SetSecret)}),
		final("Stored."),
	)
	resp, err := generate(ctx, g, m, ad, "conv-a", ai.NewUserTextMessage("Remember a number."))
	require.NoError(t, err)
	assert.Equal(t, "Stored.", resp.Text())
	assert.Contains(t, toolResponse(t, m.Request(t, 1), "call_set"), "set")

	// Turn 2 of conversation A reads it.
	m.Reply(
		toolCalls(call{"call_get", agent.ToolName, agenttest.Input(agenttest.GetSecret)}),
		final("It is 420."),
	)
	history := append(resp.History(), ai.NewUserTextMessage("What is ten times it?"))
	resp, err = generate(ctx, g, m, ad, "conv-a", history...)
	require.NoError(t, err)
	assert.Equal(t, "It is 420.", resp.Text())
	assert.Equal(t, agenttest.WantSecret, toolResponse(t, m.Request(t, 3), "call_get"))

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	m.Reply(
		toolCalls(call{"call_other", agent.ToolName, agenttest.Input(agenttest.ReadSecret)}),
		final("There is no number here."),
	)
	resp, err = generate(ctx, g, m, ad, "conv-b", ai.NewUserTextMessage("What number did I give you?"))
	require.NoError(t, err)
	assert.Equal(t, "There is no number here.", resp.Text())
	agenttest.AssertNameError(t, toolResponse(t, m.Request(t, 5), "call_other"))
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	m.Reply(
		toolCalls(call{"call_div", agent.ToolName, agenttest.Input(agenttest.DivideByZero)}),
		toolCalls(call{"call_raise", agent.ToolName, agenttest.Input(agenttest.Raise)}),
		toolCalls(call{"call_fix", agent.ToolName, agenttest.Input(agenttest.Divide)}),
		final("It is 2.5."),
	)
	resp, err := generate(context.Background(), g, m, ad, "conv-err", ai.NewUserTextMessage("Divide."))
	require.NoError(t, err)
	assert.Equal(t, "It is 2.5.", resp.Text())
	require.Equal(t, 4, m.Count())
	agenttest.AssertTraceback(t, toolResponse(t, m.Request(t, 1), "call_div"), "ZeroDivisionError")
	assert.Contains(t, toolResponse(t, m.Request(t, 2), "call_raise"), agenttest.WantRaise)
	// The loop goes on, and the session is usable.
	assert.Equal(t, agenttest.WantDivide, toolResponse(t, m.Request(t, 3), "call_fix"))
}

// Arguments that fit the schema but that the executor refuses, and a
// statement with no value, are tool output; Call answers a tool name it
// does not know.
func TestRefusedArgumentsAndUnknownTool(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	m.Reply(
		toolCalls(call{"call_1", agent.ToolName, agenttest.Input("n = 5")}),
		toolCalls(call{"call_2", agent.ResumeToolName, map[string]any{"run_id": "nope", "results": []any{}}}),
		toolCalls(call{"call_3", agent.ToolName, agenttest.Input("double(n)")}),
		final("Done."),
	)
	resp, err := generate(context.Background(), g, m, ad, "conv-many", ai.NewUserTextMessage("Go."))
	require.NoError(t, err)
	assert.Equal(t, "Done.", resp.Text())
	assert.Equal(t, montygenkit.NoOutput, toolResponse(t, m.Request(t, 1), "call_1"))
	assert.Contains(t, toolResponse(t, m.Request(t, 2), "call_2"), agenttest.WantNotPaused)
	assert.Equal(t, "[double returned 10]\n10", toolResponse(t, m.Request(t, 3), "call_3"))

	out, err := ad.Call(context.Background(), "conv-many", agenttest.UnknownTool, agenttest.UnknownToolArgs)
	require.NoError(t, err)
	assert.Contains(t, out, agenttest.WantUnknownTool)
	out, err = ad.Call(context.Background(), "conv-many", agent.ToolName, agenttest.BadArgs)
	require.NoError(t, err)
	assert.Contains(t, out, agenttest.WantCodeRequired)
}

// Genkit checks a request's input against the tool's input schema (the
// executor's) before the tool runs, and ends the loop when it does not
// fit; the adapter documents this.
func TestGenkitRefusesInputOutsideTheSchema(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	m.Reply(toolCalls(call{"call_bad", agent.ToolName, map[string]any{"source": "n"}}), final("unreachable"))
	_, err := generate(context.Background(), g, m, ad, "conv-bad", ai.NewUserTextMessage("Go."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "code")
	assert.Equal(t, 1, m.Count())
}

// A run paused at a client tool goes on when the model calls
// resume_python, both through Genkit in the conversation's session; the
// model reads run_id and the call's id from the paused result.
func TestPauseAndResume(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g, m := newModel(t)
	var paused string
	m.Reply(toolCalls(call{"call_run", agent.ToolName, agenttest.PauseInput()}))
	m.ReplyWith(func(req *ai.ModelRequest) *ai.Message {
		last := req.Messages[len(req.Messages)-1]
		if len(last.Content) == 1 && last.Content[0].IsToolResponse() {
			paused, _ = last.Content[0].ToolResponse.Output.(string)
		}
		runID, callID := agenttest.RunID(paused), agenttest.AskUserID(paused)
		if runID == "" || callID == "" {
			return final("The run did not pause.")
		}
		return toolCalls(call{"call_resume", agent.ResumeToolName, agenttest.ResumeInput(runID, callID)})
	})
	m.Reply(final("PARIS it is."))

	resp, err := generate(context.Background(), g, m, ad, "conv-pause", ai.NewUserTextMessage("Shout my city."))
	require.NoError(t, err)
	assert.Equal(t, "PARIS it is.", resp.Text())
	require.Equal(t, 3, m.Count())
	assert.Contains(t, paused, "ask_user")
	assert.Equal(t, agenttest.WantResumed, toolResponse(t, m.Request(t, 2), "call_resume"))
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montygenkit.New)
	ctx := context.Background()

	// A conversation key that is no thread key: the call fails, and the
	// loop ends.
	for _, key := range agenttest.BadConversationKeys() {
		g, m := newModel(t)
		m.Reply(toolCalls(call{"call_1", agent.ToolName, agenttest.Input("1")}), final("unreachable"))
		_, err := generate(ctx, g, m, ad, key, ai.NewUserTextMessage("Go."))
		require.Error(t, err, "key %q", key)
		assert.Contains(t, err.Error(), "conversation key", "key %q", key)
		assert.Equal(t, 1, m.Count(), "key %q", key)
	}

	// The caller's context ends while the model answers: the tool call
	// ends the loop, and the model is not asked again.
	cause := errors.New("the user left")
	runCtx, cancel := context.WithCancelCause(ctx)
	g, m := newModel(t)
	m.ReplyWith(func(*ai.ModelRequest) *ai.Message {
		cancel(cause)
		return toolCalls(call{"call_1", agent.ToolName, agenttest.Input("1 + 1")})
	})
	m.Reply(final("unreachable"))
	_, err := generate(runCtx, g, m, ad, "ok", ai.NewUserTextMessage("Go."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), cause.Error())
	assert.Equal(t, 1, m.Count())

	// The tools' functions and Call, on their own: a bad conversation
	// key, a context that ended, a closed keeper (CallerErrors closes
	// it). No output comes with the error.
	agenttest.CallerErrors(t, exec, "montygenkit", func(ctx context.Context, conversation string) (any, error) {
		return ad.Tools(conversation)[0].(ai.Tool).RunRaw(ctx, agenttest.Input("1 + 1"))
	}, func(ctx context.Context, conversation string) (any, error) {
		return ad.Call(ctx, conversation, agent.ToolName, agenttest.Args("1 + 1"))
	})

	// The executor's keeper is closed: the loop ends with the error.
	g, m = newModel(t)
	m.Reply(toolCalls(call{"call_1", agent.ToolName, agenttest.Input("1 + 1")}), final("unreachable"))
	_, err = generate(ctx, g, m, ad, "closed", ai.NewUserTextMessage("Go."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), session.ErrClosed.Error())
	assert.Equal(t, 1, m.Count())
}

// Conversations run in parallel, each in its own session, through one
// Genkit and one model.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenkit.New)
	g := genkit.Init(context.Background())
	const n = 4
	models := make([]*scriptedModel, n)
	for i := range models {
		m := defineModel(g, fmt.Sprintf("test/par-%d", i), &ai.ModelSupports{Multiturn: true, Tools: true}, "")
		m.Reply(
			toolCalls(call{"call_set", agent.ToolName, agenttest.Input(agenttest.SetV(i))}),
			toolCalls(call{"call_get", agent.ToolName, agenttest.Input(agenttest.GetV)}),
			final("Done."),
		)
		models[i] = m
	}
	answers := make([]string, n)
	agenttest.Parallel(t, n, func(i int, conversation string) error {
		resp, err := generate(context.Background(), g, models[i], ad, conversation, ai.NewUserTextMessage("Go."))
		if err == nil {
			answers[i] = resp.Text()
		}
		return err
	})
	for i, m := range models {
		assert.Equal(t, "Done.", answers[i])
		assert.Equal(t, agenttest.WantV(i), toolResponse(t, m.Request(t, 2), "call_get"), "par-%d", i)
	}
}
