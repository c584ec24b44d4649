package montyanthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/agent"
	montyanthropic "github.com/monty-go/monty/session/agent/adapters/anthropic"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// newFakeAPI starts a local Messages API, which answers each request with
// the next of its replies (JSON in the shape the API returns, or a
// function of the request that writes it) and keeps the request bodies
// for the test to check, and returns a client of it.
func newFakeAPI(t *testing.T) (*agenttest.API, anthropic.Client) {
	api := agenttest.NewAPI(t, agenttest.APIOptions{
		Accept: func(r *http.Request) (int, string) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || !authorized(r) || r.Header.Get("Anthropic-Version") == "" {
				return http.StatusNotFound, "unexpected request " + r.Method + " " + r.URL.Path
			}
			return 0, ""
		},
		Fail: func(w http.ResponseWriter, status int, message string) {
			kind := map[int]string{http.StatusNotFound: "not_found_error", http.StatusBadRequest: "invalid_request_error"}[status]
			if kind == "" {
				kind = "api_error"
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":`+agenttest.JSONString(kind)+`,"message":`+agenttest.JSONString(message)+`},"request_id":"req_test"}`)
		},
		Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_test"}},
	})
	client := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(api.URL),
		option.WithAPIKey("test"), option.WithMaxRetries(0))
	return api, client
}

// authorized reports whether a request carries the test key, as the SDK
// sends it (a bearer token; the x-api-key header works too).
func authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bearer test" || r.Header.Get("X-Api-Key") == "test"
}

// toolUse is a message that stops to use tools: a text block, then a
// tool_use block per call, each {id, name, input (a JSON object)}.
func toolUse(id string, calls ...[3]string) string {
	blocks := []string{`{"type":"text","text":"I'll work that out with Python."}`}
	for _, c := range calls {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s,"caller":{"type":"direct"}}`, c[0], c[1], c[2]))
	}
	return message(id, strings.Join(blocks, ","), "tool_use")
}

// withServerTools is a tool_use message with, before its tool_use blocks,
// a thinking block and a web search the API ran itself: blocks the
// adapter leaves alone and the loop sends back as they were.
func withServerTools(msg string) string {
	server := `{"type":"thinking","thinking":"Search first, then compute.","signature":"sig_test"},` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"monty python sandbox"},"caller":{"type":"direct"}},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","caller":{"type":"direct"},"content":[{"type":"web_search_result",` +
		`"title":"Monty","url":"https://example.com/monty","encrypted_content":"enc_test","page_age":null}]},`
	return strings.Replace(msg, `"content":[`, `"content":[`+server, 1)
}

// final is a message with the model's final answer.
func final(id, text string) string {
	return message(id, `{"type":"text","text":`+agenttest.JSONString(text)+`}`, "end_turn")
}

// message is a Messages API response with content blocks.
func message(id, content, stopReason string) string {
	return `{"id":"` + id + `","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
		`"content":[` + content + `],"stop_reason":"` + stopReason + `","stop_sequence":null,` +
		`"usage":{"input_tokens":1532,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,` +
		`"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},` +
		`"output_tokens":64,"service_tier":"standard"}}`
}

// loop is an agent loop over the Messages API: it sends the messages,
// answers tool_use blocks through the adapter until the model answers, and
// returns the answer and the messages with the turn appended.
func loop(t *testing.T, client anthropic.Client, ad *montyanthropic.Adapter, conversation string, msgs []anthropic.MessageParam) (string, []anthropic.MessageParam) {
	t.Helper()
	answer, msgs, err := run(client, ad, conversation, msgs)
	require.NoError(t, err)
	return answer, msgs
}

// run is loop's body, which reports what went wrong as an error, for
// goroutines other than the test's.
func run(client anthropic.Client, ad *montyanthropic.Adapter, conversation string, msgs []anthropic.MessageParam) (string, []anthropic.MessageParam, error) {
	ctx := context.Background()
	for range 5 {
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     anthropic.ModelClaudeSonnet4_5,
			MaxTokens: 1024,
			Messages:  msgs,
			Tools:     ad.Tools(),
		})
		if err != nil {
			return "", nil, err
		}
		msgs = append(msgs, msg.ToParam())
		results, err := ad.Handle(ctx, conversation, msg)
		if err != nil {
			return "", nil, fmt.Errorf("a tool call must not end the loop: %w", err)
		}
		uses := 0
		for _, block := range msg.Content {
			if block.Type == "tool_use" {
				uses++
			}
		}
		if len(results) != uses {
			return "", nil, fmt.Errorf("%d tool results for %d tool_use blocks", len(results), uses)
		}
		if msg.StopReason != anthropic.StopReasonToolUse {
			var answer strings.Builder
			for _, block := range msg.Content {
				answer.WriteString(block.Text)
			}
			return answer.String(), msgs, nil
		}
		msgs = append(msgs, anthropic.NewUserMessage(results...))
	}
	return "", nil, errors.New("the model did not answer in 5 rounds")
}

// toolResult finds the tool_result block answering toolUseID in a
// request's last message (a user message) and returns its text and
// is_error.
func toolResult(t *testing.T, req map[string]any, toolUseID string) (string, bool) {
	t.Helper()
	text, isError, err := findToolResult(req, toolUseID)
	require.NoError(t, err)
	return text, isError
}

// findToolResult is toolResult for a reply function, which runs on the
// server's goroutine and must not stop the test: it says what is wrong
// as an error.
func findToolResult(req map[string]any, toolUseID string) (text string, isError bool, err error) {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return "", false, errors.New("no messages")
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "user" {
		return "", false, fmt.Errorf("the last message is no user message: %v", last)
	}
	content, _ := last["content"].([]any)
	for _, b := range content {
		block, _ := b.(map[string]any)
		if block["type"] != "tool_result" || block["tool_use_id"] != toolUseID {
			continue
		}
		inner, _ := block["content"].([]any)
		if len(inner) != 1 {
			return "", false, fmt.Errorf("tool_result content is no single block: %v", block)
		}
		part, _ := inner[0].(map[string]any)
		text, ok := part["text"].(string)
		if part["type"] != "text" || !ok {
			return "", false, fmt.Errorf("tool_result content is no text block: %v", block)
		}
		isError, _ := block["is_error"].(bool)
		return text, isError, nil
	}
	return "", false, fmt.Errorf("no tool_result for %s in %v", toolUseID, last)
}

func user(text string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}
}

func TestToolsReachTheAPI(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)
	api.Reply(final("msg_0", "Hello."))
	answer, _ := loop(t, client, ad, "c0", user("hi"))
	assert.Equal(t, "Hello.", answer)

	tools := agenttest.Objects(t, api.Request(t, 0), "tools")
	agenttest.AssertToolObjects(t, exec.Tools(), tools, "input_schema")
	// The description briefs the model on the registered function.
	assert.Contains(t, tools[0]["description"], agenttest.FuncName)
}

func TestGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)
	api.Reply(
		toolUse("msg_1", [3]string{"toolu_go", agent.ToolName, agenttest.Args(agenttest.CallDouble)}),
		final("msg_2", "Double 21 is 42."),
	)
	answer, _ := loop(t, client, ad, "conv-go", user("What is double 21?"))
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.Count())
	out, isError := toolResult(t, api.Request(t, 1), "toolu_go")
	assert.False(t, isError)
	agenttest.AssertDoubled(t, out)
	// The assistant message with its tool_use block goes back before the
	// tool result.
	msgs := agenttest.Objects(t, api.Request(t, 1), "messages")
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1]["role"])
	use := agenttest.Objects(t, msgs[1], "content")[1]
	assert.Equal(t, "tool_use", use["type"])
	assert.Equal(t, "toolu_go", use["id"])
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)

	// Turn 1 of conversation A sets a variable.
	api.Reply(
		toolUse("msg_1", [3]string{"toolu_set", agent.ToolName, agenttest.Args(agenttest.SetSecret)}),
		final("msg_2", "Stored."),
	)
	answer, history := loop(t, client, ad, "conv-a", user("Remember a number."))
	assert.Equal(t, "Stored.", answer)
	out, _ := toolResult(t, api.Request(t, 1), "toolu_set")
	assert.Contains(t, out, "set")

	// Turn 2 of conversation A reads it.
	api.Reply(
		toolUse("msg_3", [3]string{"toolu_get", agent.ToolName, agenttest.Args(agenttest.GetSecret)}),
		final("msg_4", "It is 420."),
	)
	history = append(history, anthropic.NewUserMessage(anthropic.NewTextBlock("What is ten times it?")))
	answer, _ = loop(t, client, ad, "conv-a", history)
	assert.Equal(t, "It is 420.", answer)
	out, isError := toolResult(t, api.Request(t, 3), "toolu_get")
	assert.Equal(t, agenttest.WantSecret, out)
	assert.False(t, isError)

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	api.Reply(
		toolUse("msg_5", [3]string{"toolu_other", agent.ToolName, agenttest.Args(agenttest.ReadSecret)}),
		final("msg_6", "There is no number here."),
	)
	answer, _ = loop(t, client, ad, "conv-b", user("What number did I give you?"))
	assert.Equal(t, "There is no number here.", answer)
	out, isError = toolResult(t, api.Request(t, 5), "toolu_other")
	assert.True(t, isError)
	agenttest.AssertNameError(t, out)
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)
	api.Reply(
		toolUse("msg_1", [3]string{"toolu_div", agent.ToolName, agenttest.Args(agenttest.DivideByZero)}),
		toolUse("msg_2", [3]string{"toolu_raise", agent.ToolName, agenttest.Args(agenttest.Raise)}),
		toolUse("msg_3", [3]string{"toolu_fix", agent.ToolName, agenttest.Args(agenttest.Divide)}),
		final("msg_4", "It is 2.5."),
	)
	answer, _ := loop(t, client, ad, "conv-err", user("Divide."))
	assert.Equal(t, "It is 2.5.", answer)
	require.Equal(t, 4, api.Count())
	out, isError := toolResult(t, api.Request(t, 1), "toolu_div")
	assert.True(t, isError)
	agenttest.AssertTraceback(t, out, "ZeroDivisionError")
	out, isError = toolResult(t, api.Request(t, 2), "toolu_raise")
	assert.True(t, isError)
	assert.Contains(t, out, agenttest.WantRaise)
	// The loop goes on, and the session is usable.
	out, isError = toolResult(t, api.Request(t, 3), "toolu_fix")
	assert.False(t, isError)
	assert.Equal(t, agenttest.WantDivide, out)
}

// A failed call leaves the session as it was.
func TestFailedCallKeepsNoState(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)
	api.Reply(
		toolUse("msg_1", [3]string{"toolu_div", agent.ToolName, agenttest.Args(agenttest.DivideByZero)}),
		toolUse("msg_2", [3]string{"toolu_read", agent.ToolName, agenttest.Args("total")}),
		final("msg_3", "Nothing was kept."),
	)
	answer, _ := loop(t, client, ad, "conv-kept", user("Divide."))
	assert.Equal(t, "Nothing was kept.", answer)
	out, isError := toolResult(t, api.Request(t, 2), "toolu_read")
	assert.True(t, isError)
	assert.Contains(t, out, "NameError")
}

func TestSeveralToolUsesBadInputAndUnknownTool(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)
	calls := agenttest.SeveralCalls()
	var uses [][3]string
	for _, c := range calls {
		uses = append(uses, [3]string{c.ID, c.Name, c.Args})
	}
	api.Reply(withServerTools(toolUse("msg_1", uses...)), final("msg_2", "Done."))
	answer, _ := loop(t, client, ad, "conv-many", user("Go."))
	assert.Equal(t, "Done.", answer)
	req := api.Request(t, 1)
	for _, c := range calls {
		out, isError := toolResult(t, req, c.ID)
		c.AssertOutput(t, out)
		assert.Equal(t, c.Failed, isError, c.ID)
	}
	// One user message answers them all, in the tool_use blocks' order,
	// with nothing before the tool results; the server tool's blocks went
	// back in the assistant message and got no answer.
	msgs := agenttest.Objects(t, req, "messages")
	require.Len(t, msgs, 3)
	var kinds []any
	for _, b := range agenttest.Objects(t, msgs[1], "content") {
		kinds = append(kinds, b["type"])
	}
	assert.Equal(t, []any{"thinking", "server_tool_use", "web_search_tool_result", "text",
		"tool_use", "tool_use", "tool_use", "tool_use", "tool_use", "tool_use"}, kinds)
	results := agenttest.Objects(t, msgs[2], "content")
	require.Len(t, results, len(calls))
	for i, c := range calls {
		assert.Equal(t, "tool_result", results[i]["type"])
		assert.Equal(t, c.ID, results[i]["tool_use_id"])
	}
}

// A run paused at a client tool goes on when the model calls
// resume_python, both answered through the adapter in the conversation's
// session; the model reads run_id and the call's id from the paused
// result, as a real one does.
func TestPauseAndResume(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	api, client := newFakeAPI(t)
	var paused string
	api.Reply(toolUse("msg_1", [3]string{"toolu_run", agent.ToolName, agenttest.PauseArgs}))
	api.ReplyWith(func(req map[string]any) string {
		// The model asks the user (a tool of its own, answered here) and
		// resumes the run with the answer.
		paused, _, _ = findToolResult(req, "toolu_run")
		args, ok := agenttest.ResumeArgs(paused)
		if !ok {
			return final("msg_2", "The run did not pause.")
		}
		return toolUse("msg_2", [3]string{"toolu_resume", agent.ResumeToolName, args})
	})
	api.Reply(final("msg_3", "PARIS it is."))

	answer, _ := loop(t, client, ad, "conv-pause", user("Shout my city."))
	assert.Equal(t, "PARIS it is.", answer)
	require.Equal(t, 3, api.Count())
	out, isError := toolResult(t, api.Request(t, 1), "toolu_run")
	assert.False(t, isError, "a paused run did not fail")
	assert.Contains(t, out, "ask_user")
	assert.Equal(t, paused, out)
	out, isError = toolResult(t, api.Request(t, 2), "toolu_resume")
	assert.False(t, isError)
	assert.Equal(t, agenttest.WantResumed, out)
}

// Another conversation cannot resume a conversation's paused run.
func TestResumeFromAnotherConversation(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	ctx := context.Background()
	out, isError, err := ad.Call(ctx, "conv-pause", agent.ToolName,
		json.RawMessage(`{"code": "ask_user('Which city?')", "client_tools": [{"name": "ask_user"}]}`))
	require.NoError(t, err)
	assert.False(t, isError)
	runID := agenttest.RunID(out)
	require.NotEmpty(t, runID, out)
	res, _ := json.Marshal(map[string]any{"run_id": runID, "results": []any{}})
	out, isError, err = ad.Call(ctx, "conv-other", agent.ResumeToolName, res)
	require.NoError(t, err)
	assert.True(t, isError)
	assert.Contains(t, out, "is not paused")
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montyanthropic.New)
	var msg anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(toolUse("msg_1", [3]string{"toolu_1", agent.ToolName, agenttest.Args("1 + 1")})), &msg))

	out, err := ad.Handle(context.Background(), "ok", &msg)
	require.NoError(t, err)
	require.Len(t, out, 1)
	none, err := ad.Handle(context.Background(), "ok", nil)
	require.NoError(t, err)
	assert.Empty(t, none)

	// A bad conversation key, a context that ended, a closed keeper: no
	// blocks come with the error.
	agenttest.CallerErrors(t, exec, "montyanthropic", func(ctx context.Context, conversation string) (any, error) {
		return ad.Handle(ctx, conversation, &msg)
	}, func(ctx context.Context, conversation string) (any, error) {
		text, _, err := ad.Call(ctx, conversation, agent.ToolName, json.RawMessage(agenttest.Args("1")))
		return text, err
	})
}

// Conversations run in parallel, each in its own session, each with its
// own loop through the SDK.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyanthropic.New)
	type conv struct {
		api    *agenttest.API
		client anthropic.Client
		answer string
	}
	runs := make([]*conv, 4)
	for i := range runs {
		api, client := newFakeAPI(t)
		api.Reply(
			toolUse("msg_set", [3]string{"toolu_set", agent.ToolName, agenttest.Args(agenttest.SetV(i))}),
			toolUse("msg_get", [3]string{"toolu_get", agent.ToolName, agenttest.Args(agenttest.GetV)}),
			final("msg_end", "Done."),
		)
		runs[i] = &conv{api: api, client: client}
	}
	agenttest.Parallel(t, len(runs), func(i int, conversation string) (err error) {
		r := runs[i]
		r.answer, _, err = run(r.client, ad, conversation, user("Go."))
		return err
	})
	for i, r := range runs {
		assert.Equal(t, "Done.", r.answer)
		out, isError := toolResult(t, r.api.Request(t, 2), "toolu_get")
		assert.Equal(t, agenttest.WantV(i), out, "par-%d", i)
		assert.False(t, isError)
	}
}
