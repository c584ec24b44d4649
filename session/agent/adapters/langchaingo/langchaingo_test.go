package montylangchaingo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montylangchaingo "github.com/monty-go/monty/session/agent/adapters/langchaingo"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// model is LangChainGo's fake LLM, which replays its completions in
// order, with the prompts it was given kept for the test to check, and an
// optional hook that sees each prompt before the fake answers it (to add
// a completion made from it).
type model struct {
	llm    *fake.LLM
	before func(prompt string)

	mu      sync.Mutex
	prompts []string
}

var _ llms.Model = (*model)(nil)

func newModel(completions ...string) *model {
	return &model{llm: fake.NewFakeLLM(completions)}
}

func (m *model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, msg := range msgs {
		for _, p := range msg.Parts {
			if text, ok := p.(llms.TextContent); ok {
				b.WriteString(text.Text)
			}
		}
	}
	m.mu.Lock()
	m.prompts = append(m.prompts, b.String())
	m.mu.Unlock()
	if m.before != nil {
		m.before(b.String())
	}
	return m.llm.GenerateContent(ctx, msgs, opts...)
}

func (m *model) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func (m *model) prompt(t *testing.T, i int) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Less(t, i, len(m.prompts), "prompts sent")
	return m.prompts[i]
}

func (m *model) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.prompts)
}

// action is a ReAct completion that calls a tool with input.
func action(tool, input string) string {
	return "Thought: I'll work that out with Python.\nAction: " + tool + "\nAction Input: " + input
}

// final is a ReAct completion with the final answer.
func final(answer string) string {
	return "Thought: I now know the final answer\nFinal Answer: " + answer
}

// run runs LangChainGo's one-shot (ReAct) agent with the tools and the
// model through its agent executor, and returns the answer and the steps
// taken (the tool inputs and their observations).
func run(ctx context.Context, m *model, ts []tools.Tool, question string) (string, []schema.AgentStep, error) {
	ex := agents.NewExecutor(agents.NewOneShotAgent(m, ts),
		agents.WithMaxIterations(6), agents.WithReturnIntermediateSteps())
	out, err := chains.Call(ctx, ex, map[string]any{"input": question})
	if err != nil {
		return "", nil, err
	}
	steps, _ := out["intermediateSteps"].([]schema.AgentStep)
	answer, _ := out["output"].(string)
	return answer, steps, nil
}

// loop is run for the test's goroutine.
func loop(t *testing.T, m *model, ts []tools.Tool, question string) (string, []schema.AgentStep) {
	t.Helper()
	answer, steps, err := run(context.Background(), m, ts, question)
	require.NoError(t, err)
	return answer, steps
}

// observations are the tool outputs of the steps.
func observations(steps []schema.AgentStep) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Observation)
	}
	return out
}

func TestToolsReachTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)
	m := newModel(final("Nothing to do."))
	answer, steps := loop(t, m, ad.Tools("conv-1"), "Hello?")
	assert.Equal(t, "Nothing to do.", answer)
	assert.Empty(t, steps)

	prompt := m.prompt(t, 0)
	assert.Contains(t, prompt, "[ execute_python, resume_python ]")
	assert.Contains(t, prompt, "- execute_python: ")
	assert.Contains(t, prompt, "- resume_python: ")
	assert.Contains(t, prompt, "def "+agenttest.FuncName+"(", "the host functions are briefed")
	assert.Contains(t, prompt, `"code":{"type":"string"`, "the argument format is described")
	assert.Contains(t, prompt, `"run_id":{"type":"string"`)

	ts := ad.Tools("conv-1")
	require.Len(t, ts, 2)
	assert.Equal(t, agent.ToolName, ts[0].Name())
	assert.Equal(t, agent.ResumeToolName, ts[1].Name())
	assert.Equal(t, agent.ToolName, ad.Tool("x").Name())
	assert.Equal(t, agent.ResumeToolName, ad.ResumeTool("x").Name())
}

// Python calls a Go function of the registry; the input is plain code, a
// fenced block or the JSON arguments.
func TestGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)
	m := newModel(
		action(agent.ToolName, "print(double(21))"),
		action(agent.ToolName, "```python\nn = double(2)\ndouble(n)\n```"),
		action(agent.ToolName, `{"code": "double(100)", "type_check": false}`),
		final("42, 8 and 200."),
	)
	answer, steps := loop(t, m, ad.Tools("conv-go"), "Double 21.")
	assert.Equal(t, "42, 8 and 200.", answer)
	assert.Equal(t, []string{
		"[double returned 42]\n42",
		"[double returned 4]\n[double returned 8]\n8",
		"[double returned 200]\n200",
	}, observations(steps))
	require.Equal(t, 4, m.count())
	assert.Contains(t, m.prompt(t, 1), "Observation: [double returned 42]\n42\n", "the model reads the output")
	assert.Contains(t, m.prompt(t, 3), "Observation: [double returned 200]\n200\n")
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)

	// Turn 1 of conversation A defines x.
	m := newModel(action(agent.ToolName, "x = double(5)"), action(agent.ToolName, "y = x"), final("Set."))
	answer, steps := loop(t, m, ad.Tools("conv-a"), "Set x.")
	assert.Equal(t, "Set.", answer)
	assert.Equal(t, []string{"[double returned 10]", montylangchaingo.NoOutput}, observations(steps))

	// Turn 2, a new agent run, still sees it.
	m = newModel(action(agent.ToolName, "x + 1"), final("11."))
	answer, steps = loop(t, m, ad.Tools("conv-a"), "What is x + 1?")
	assert.Equal(t, "11.", answer)
	assert.Equal(t, []string{"11"}, observations(steps))

	// Conversation B does not: the NameError goes back to the model, and
	// the loop goes on.
	m = newModel(action(agent.ToolName, "x"), final("There is no x here."))
	answer, steps = loop(t, m, ad.Tools("conv-b"), "What is x?")
	assert.Equal(t, "There is no x here.", answer)
	require.Len(t, steps, 1)
	assert.Contains(t, steps[0].Observation, "NameError")
	assert.Contains(t, m.prompt(t, 1), "NameError")
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)
	m := newModel(
		action(agent.ToolName, "1 / 0"),
		action(agent.ToolName, "1 / 2"),
		final("A half."),
	)
	answer, steps := loop(t, m, ad.Tools("conv-exc"), "Divide.")
	assert.Equal(t, "A half.", answer)
	require.Len(t, steps, 2)
	assert.Contains(t, steps[0].Observation, "ZeroDivisionError")
	assert.Equal(t, "0.5", steps[1].Observation)
	assert.Contains(t, m.prompt(t, 1), "ZeroDivisionError", "the model reads the traceback")
}

// Input the tools do not take, and a tool the adapter does not know, are
// the model's to correct too.
func TestBadInput(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)
	m := newModel(
		action(agent.ToolName, `{"cod": "1"}`),
		action(agent.ResumeToolName, "print(1)"),
		action(agent.ResumeToolName, `{"run_id": "nope", "results": []}`),
		action(agent.ToolName, `{"code": "{\"a\": 1}"}`),
		final("Done."),
	)
	answer, steps := loop(t, m, ad.Tools("conv-bad"), "Go.")
	assert.Equal(t, "Done.", answer)
	obs := observations(steps)
	require.Len(t, obs, 4)
	assert.Contains(t, obs[0], `"code" is required`)
	assert.Contains(t, obs[1], agent.ResumeToolName)
	assert.Contains(t, obs[2], "is not paused")
	assert.Equal(t, "{'a': 1}", obs[3])

	out, err := ad.Call(context.Background(), "conv-bad", "other_tool", "1")
	require.NoError(t, err)
	assert.Contains(t, out, `Unknown tool "other_tool"`)
}

func TestPauseAndResume(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)
	m := newModel(action(agent.ToolName, agenttest.PauseArgs))
	var paused string
	m.before = func(prompt string) {
		if m.count() != 2 {
			return
		}
		// The model asks the user (a tool of its own) and resumes the run
		// with the answer.
		paused = prompt
		args, ok := agenttest.ResumeArgs(prompt)
		if !ok {
			m.llm.AddResponse(final("The run did not pause."))
			return
		}
		m.llm.AddResponse(action(agent.ResumeToolName, args))
		m.llm.AddResponse(final("PARIS it is."))
	}
	answer, steps := loop(t, m, ad.Tools("conv-pause"), "Shout my city.")
	assert.Equal(t, "PARIS it is.", answer)
	require.Len(t, steps, 2)
	assert.Contains(t, steps[0].Observation, "ask_user")
	assert.Contains(t, paused, steps[0].Observation)
	assert.Equal(t, agenttest.WantResumed, steps[1].Observation)
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montylangchaingo.New)
	script := func() *model { return newModel(action(agent.ToolName, "1 + 1"), final("2.")) }

	answer, _, err := run(context.Background(), script(), ad.Tools("ok"), "Add.")
	require.NoError(t, err)
	assert.Equal(t, "2.", answer)

	// A conversation key that is no thread key ends the loop.
	for _, key := range agenttest.BadConversationKeys() {
		_, _, err = run(context.Background(), script(), ad.Tools(key), "Add.")
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
	}

	// The caller's context ended: a tool call made in it ends the loop
	// with the cause.
	cause := errors.New("the user left")
	ctx, cancel := context.WithCancelCause(context.Background())
	m := script()
	m.before = func(string) { cancel(cause) }
	_, _, err = run(ctx, m, ad.Tools("ok"), "Add.")
	assert.ErrorIs(t, err, cause)

	// The tools and Call, on their own: a bad conversation key, a context
	// that ended, a closed keeper (CallerErrors closes it). No output
	// comes with the error.
	agenttest.CallerErrors(t, exec, "montylangchaingo", func(ctx context.Context, conversation string) (any, error) {
		return ad.Tool(conversation).Call(ctx, "1 + 1")
	}, func(ctx context.Context, conversation string) (any, error) {
		return ad.ResumeTool(conversation).Call(ctx, agenttest.ResumeNothing)
	}, func(ctx context.Context, conversation string) (any, error) {
		return ad.Call(ctx, conversation, agent.ToolName, "1")
	})

	// The executor's keeper is closed: the loop ends with the error.
	_, _, err = run(context.Background(), script(), ad.Tools("closed"), "Add.")
	assert.ErrorIs(t, err, session.ErrClosed)
}

// Conversations run in parallel, each in its own session, each with its
// own agent loop.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montylangchaingo.New)
	answers := make([]string, 4)
	steps := make([][]schema.AgentStep, 4)
	agenttest.Parallel(t, len(answers), func(i int, conversation string) (err error) {
		m := newModel(
			action(agent.ToolName, agenttest.SetV(i)),
			action(agent.ToolName, agenttest.GetV),
			final("Done."),
		)
		answers[i], steps[i], err = run(context.Background(), m, ad.Tools(conversation), "Go.")
		return err
	})
	for i := range answers {
		assert.Equal(t, "Done.", answers[i])
		assert.Equal(t, []string{montylangchaingo.NoOutput, agenttest.WantV(i)}, observations(steps[i]), "par-%d", i)
	}
}
