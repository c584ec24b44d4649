package montyanthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montyanthropic "github.com/monty-go/monty/session/agent/adapters/anthropic"
	"github.com/monty-go/monty/session/store/memstore"
)

// newAdapter returns an adapter over an executor whose registry offers
// double(n) and whose sessions live in memory.
func newAdapter(t *testing.T) (*montyanthropic.Adapter, *agent.Executor) {
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
	return montyanthropic.New(exec), exec
}

// fakeAPI is a local Messages API: it answers each request with the next
// of its replies (JSON in the shape the API returns, or a function of the
// request that writes it) and keeps the request bodies for the test to
// check.
type fakeAPI struct {
	t *testing.T

	mu       sync.Mutex
	replies  []func(req map[string]any) string
	requests []map[string]any
}

func newFakeAPI(t *testing.T) (*fakeAPI, anthropic.Client) {
	f := &fakeAPI{t: t}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL),
		option.WithAPIKey("test"), option.WithMaxRetries(0))
	return f, client
}

// reply queues replies.
func (f *fakeAPI) reply(bodies ...string) {
	for _, b := range bodies {
		f.replyWith(func(map[string]any) string { return b })
	}
}

// replyWith queues a reply made from the request it answers.
func (f *fakeAPI) replyWith(fn func(req map[string]any) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, fn)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	fail := func(status int, kind, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":`+jsonString(kind)+`,"message":`+jsonString(message)+`},"request_id":"req_test"}`)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || !authorized(r) || r.Header.Get("Anthropic-Version") == "" {
		fail(http.StatusNotFound, "not_found_error", "unexpected request "+r.Method+" "+r.URL.Path)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "invalid_request_error", "bad JSON")
		return
	}
	f.requests = append(f.requests, req)
	if len(f.replies) == 0 {
		fail(http.StatusInternalServerError, "api_error", "no reply queued")
		return
	}
	next := f.replies[0]
	f.replies = f.replies[1:]
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_test")
	_, _ = io.WriteString(w, next(req))
}

// authorized reports whether a request carries the test key, as the SDK
// sends it (a bearer token; the x-api-key header works too).
func authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bearer test" || r.Header.Get("X-Api-Key") == "test"
}

// request returns the i-th request body the server received.
func (f *fakeAPI) request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Less(f.t, i, len(f.requests), "requests received")
	return f.requests[i]
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// input is execute_python's input for code, as the model writes it in a
// tool_use block (a JSON object).
func input(code string) string {
	return `{"code": ` + jsonString(code) + `}`
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
	return message(id, `{"type":"text","text":`+jsonString(text)+`}`, "end_turn")
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

// messages returns the messages of a request body.
func messages(t *testing.T, req map[string]any) []map[string]any {
	t.Helper()
	raw, ok := req["messages"].([]any)
	require.True(t, ok, "messages in %v", req)
	out := make([]map[string]any, len(raw))
	for i, m := range raw {
		out[i] = m.(map[string]any)
	}
	return out
}

// blocks returns the content blocks of a message in a request body.
func blocks(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	raw, ok := m["content"].([]any)
	require.True(t, ok, "content blocks in %v", m)
	out := make([]map[string]any, len(raw))
	for i, b := range raw {
		out[i] = b.(map[string]any)
	}
	return out
}

// toolResult finds the tool_result block answering toolUseID in a
// request's last message (a user message) and returns its text and
// is_error.
func toolResult(t *testing.T, req map[string]any, toolUseID string) (string, bool) {
	t.Helper()
	msgs := messages(t, req)
	last := msgs[len(msgs)-1]
	require.Equal(t, "user", last["role"])
	for _, b := range blocks(t, last) {
		if b["type"] == "tool_result" && b["tool_use_id"] == toolUseID {
			content := blocks(t, b)
			require.Len(t, content, 1)
			require.Equal(t, "text", content[0]["type"])
			text, ok := content[0]["text"].(string)
			require.True(t, ok, "tool_result text is a string: %v", b)
			isError, _ := b["is_error"].(bool)
			return text, isError
		}
	}
	t.Fatalf("no tool_result for %s in %v", toolUseID, last)
	return "", false
}

func user(text string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}
}

func TestToolsReachTheAPI(t *testing.T) {
	ad, exec := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(final("msg_0", "Hello."))
	answer, _ := loop(t, client, ad, "c0", user("hi"))
	assert.Equal(t, "Hello.", answer)

	tools, ok := api.request(0)["tools"].([]any)
	require.True(t, ok)
	require.Len(t, tools, 2)
	for i, want := range []agent.Tool{exec.Tool(), exec.ResumeTool()} {
		tool := tools[i].(map[string]any)
		assert.Equal(t, want.Name, tool["name"])
		assert.Equal(t, want.Description, tool["description"])
		wantSchema, _ := json.Marshal(json.RawMessage(want.Parameters))
		gotSchema, _ := json.Marshal(tool["input_schema"])
		assert.JSONEq(t, string(wantSchema), string(gotSchema))
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, tools[0].(map[string]any)["description"], "double")
}

func TestGoFunction(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		toolUse("msg_1", [3]string{"toolu_go", agent.ToolName, input("print('double is', double(21))")}),
		final("msg_2", "Double 21 is 42."),
	)
	answer, _ := loop(t, client, ad, "conv-go", user("What is double 21?"))
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.count())
	out, isError := toolResult(t, api.request(1), "toolu_go")
	assert.False(t, isError)
	assert.Contains(t, out, "[double returned 42]")
	assert.Contains(t, out, "double is 42")
	// The assistant message with its tool_use block goes back before the
	// tool result.
	msgs := messages(t, api.request(1))
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1]["role"])
	use := blocks(t, msgs[1])[1]
	assert.Equal(t, "tool_use", use["type"])
	assert.Equal(t, "toolu_go", use["id"])
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)

	// Turn 1 of conversation A sets a variable.
	api.reply(
		toolUse("msg_1", [3]string{"toolu_set", agent.ToolName, input("secret = double(20) + 2\nprint('set')")}),
		final("msg_2", "Stored."),
	)
	answer, history := loop(t, client, ad, "conv-a", user("Remember a number."))
	assert.Equal(t, "Stored.", answer)
	out, _ := toolResult(t, api.request(1), "toolu_set")
	assert.Contains(t, out, "set")

	// Turn 2 of conversation A reads it.
	api.reply(
		toolUse("msg_3", [3]string{"toolu_get", agent.ToolName, input("secret * 10")}),
		final("msg_4", "It is 420."),
	)
	history = append(history, anthropic.NewUserMessage(anthropic.NewTextBlock("What is ten times it?")))
	answer, _ = loop(t, client, ad, "conv-a", history)
	assert.Equal(t, "It is 420.", answer)
	out, isError := toolResult(t, api.request(3), "toolu_get")
	assert.Equal(t, "420", out)
	assert.False(t, isError)

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	api.reply(
		toolUse("msg_5", [3]string{"toolu_other", agent.ToolName, input("secret")}),
		final("msg_6", "There is no number here."),
	)
	answer, _ = loop(t, client, ad, "conv-b", user("What number did I give you?"))
	assert.Equal(t, "There is no number here.", answer)
	out, isError = toolResult(t, api.request(5), "toolu_other")
	assert.True(t, isError)
	assert.Contains(t, out, "NameError")
	assert.Contains(t, out, "secret")
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		toolUse("msg_1", [3]string{"toolu_div", agent.ToolName, input("total = 10\ntotal / 0")}),
		toolUse("msg_2", [3]string{"toolu_raise", agent.ToolName, input("raise ValueError('no such order: 7')")}),
		toolUse("msg_3", [3]string{"toolu_fix", agent.ToolName, input("total = 10\ntotal / 4")}),
		final("msg_4", "It is 2.5."),
	)
	answer, _ := loop(t, client, ad, "conv-err", user("Divide."))
	assert.Equal(t, "It is 2.5.", answer)
	require.Equal(t, 4, api.count())
	out, isError := toolResult(t, api.request(1), "toolu_div")
	assert.True(t, isError)
	assert.Contains(t, out, "Traceback")
	assert.Contains(t, out, "ZeroDivisionError")
	out, isError = toolResult(t, api.request(2), "toolu_raise")
	assert.True(t, isError)
	assert.Contains(t, out, "ValueError: no such order: 7")
	// The loop goes on, and the session is usable.
	out, isError = toolResult(t, api.request(3), "toolu_fix")
	assert.False(t, isError)
	assert.Equal(t, "2.5", out)
}

// A failed call leaves the session as it was.
func TestFailedCallKeepsNoState(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		toolUse("msg_1", [3]string{"toolu_div", agent.ToolName, input("total = 10\ntotal / 0")}),
		toolUse("msg_2", [3]string{"toolu_read", agent.ToolName, input("total")}),
		final("msg_3", "Nothing was kept."),
	)
	answer, _ := loop(t, client, ad, "conv-kept", user("Divide."))
	assert.Equal(t, "Nothing was kept.", answer)
	out, isError := toolResult(t, api.request(2), "toolu_read")
	assert.True(t, isError)
	assert.Contains(t, out, "NameError")
}

func TestSeveralToolUsesBadInputAndUnknownTool(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		withServerTools(toolUse("msg_1",
			[3]string{"toolu_1", agent.ToolName, input("n = 5")},
			[3]string{"toolu_2", agent.ToolName, input("n + 1")},
			[3]string{"toolu_3", agent.ToolName, `{"source": "n"}`},
			[3]string{"toolu_4", "search_web", `{"q": "monty"}`},
			[3]string{"toolu_5", agent.ResumeToolName, `{"run_id": "nope", "results": []}`},
			[3]string{"toolu_6", agent.ToolName, input("double(n)")},
		)),
		final("msg_2", "Done."),
	)
	answer, _ := loop(t, client, ad, "conv-many", user("Go."))
	assert.Equal(t, "Done.", answer)
	req := api.request(1)
	for _, c := range []struct {
		id, want string
		isError  bool
	}{
		{"toolu_1", montyanthropic.NoOutput, false},
		{"toolu_2", "6", false},
		{"toolu_3", `"code" is required`, true},
		{"toolu_4", `Unknown tool "search_web"`, true},
		{"toolu_5", `run_id "nope" is not paused`, true},
		{"toolu_6", "10", false},
	} {
		out, isError := toolResult(t, req, c.id)
		assert.Contains(t, out, c.want, c.id)
		assert.Equal(t, c.isError, isError, c.id)
	}
	// One user message answers them all, in the tool_use blocks' order,
	// with nothing before the tool results; the server tool's blocks went
	// back in the assistant message and got no answer.
	msgs := messages(t, req)
	require.Len(t, msgs, 3)
	var kinds []any
	for _, b := range blocks(t, msgs[1]) {
		kinds = append(kinds, b["type"])
	}
	assert.Equal(t, []any{"thinking", "server_tool_use", "web_search_tool_result", "text",
		"tool_use", "tool_use", "tool_use", "tool_use", "tool_use", "tool_use"}, kinds)
	results := blocks(t, msgs[2])
	require.Len(t, results, 6)
	for i, id := range []string{"toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5", "toolu_6"} {
		assert.Equal(t, "tool_result", results[i]["type"])
		assert.Equal(t, id, results[i]["tool_use_id"])
	}
}

// A run paused at a client tool goes on when the model calls
// resume_python, both answered through the adapter in the conversation's
// session; the model reads run_id and the call's id from the paused
// result, as a real one does.
func TestPauseAndResume(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	var paused string
	api.reply(toolUse("msg_1", [3]string{"toolu_run", agent.ToolName,
		`{"code": "city = ask_user('Which city?')\ncity.upper()", "client_tools": [{"name": "ask_user"}]}`}))
	api.replyWith(func(req map[string]any) string {
		// The model asks the user (a tool of its own, answered here) and
		// resumes the run with the answer.
		paused, _ = toolResultUnlocked(req, "toolu_run")
		runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(paused)
		callID := regexp.MustCompile(`- id "([^"]+)": ask_user\('Which city\?'\)`).FindStringSubmatch(paused)
		if runID == nil || callID == nil {
			return final("msg_2", "The run did not pause.")
		}
		args, _ := json.Marshal(map[string]any{"run_id": runID[1], "results": []any{map[string]any{"id": callID[1], "value": "Paris"}}})
		return toolUse("msg_2", [3]string{"toolu_resume", agent.ResumeToolName, string(args)})
	})
	api.reply(final("msg_3", "PARIS it is."))

	answer, _ := loop(t, client, ad, "conv-pause", user("Shout my city."))
	assert.Equal(t, "PARIS it is.", answer)
	require.Equal(t, 3, api.count())
	out, isError := toolResult(t, api.request(1), "toolu_run")
	assert.False(t, isError, "a paused run did not fail")
	assert.Contains(t, out, "ask_user")
	assert.Equal(t, paused, out)
	out, isError = toolResult(t, api.request(2), "toolu_resume")
	assert.False(t, isError)
	assert.Equal(t, "'PARIS'", out)
}

// Another conversation cannot resume a conversation's paused run.
func TestResumeFromAnotherConversation(t *testing.T) {
	ad, _ := newAdapter(t)
	ctx := context.Background()
	out, isError, err := ad.Call(ctx, "conv-pause", agent.ToolName,
		json.RawMessage(`{"code": "ask_user('Which city?')", "client_tools": [{"name": "ask_user"}]}`))
	require.NoError(t, err)
	assert.False(t, isError)
	runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(out)
	require.NotNil(t, runID, out)
	res, _ := json.Marshal(map[string]any{"run_id": runID[1], "results": []any{}})
	out, isError, err = ad.Call(ctx, "conv-other", agent.ResumeToolName, res)
	require.NoError(t, err)
	assert.True(t, isError)
	assert.Contains(t, out, "is not paused")
}

// toolResultUnlocked is toolResult for a reply function, which runs on
// the server's goroutine and must not stop the test: "" when it is not
// there.
func toolResultUnlocked(req map[string]any, toolUseID string) (string, bool) {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return "", false
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].([]any)
	for _, b := range content {
		block, _ := b.(map[string]any)
		if block["type"] != "tool_result" || block["tool_use_id"] != toolUseID {
			continue
		}
		inner, _ := block["content"].([]any)
		if len(inner) == 0 {
			return "", false
		}
		text, _ := inner[0].(map[string]any)["text"].(string)
		isError, _ := block["is_error"].(bool)
		return text, isError
	}
	return "", false
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := newAdapter(t)
	var msg anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(toolUse("msg_1", [3]string{"toolu_1", agent.ToolName, input("1 + 1")})), &msg))

	out, err := ad.Handle(context.Background(), "ok", &msg)
	require.NoError(t, err)
	require.Len(t, out, 1)
	none, err := ad.Handle(context.Background(), "ok", nil)
	require.NoError(t, err)
	assert.Empty(t, none)

	// A conversation key that is no thread key.
	for _, key := range []string{"", "a/b", "../x"} {
		out, err = ad.Handle(context.Background(), key, &msg)
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		assert.Nil(t, out)
	}

	// The caller's context ended.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err = ad.Handle(ctx, "ok", &msg)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, out)
	cause := errors.New("the user left")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	// The executor may see the context end at different points of the
	// call (it races with taking the session's turn): each must give the
	// cause.
	for range 50 {
		_, _, err = ad.Call(ctx, "ok", agent.ToolName, json.RawMessage(input("1")))
		require.ErrorIs(t, err, cause)
	}

	// The executor is closed.
	exec.Close()
	out, err = ad.Handle(context.Background(), "closed", &msg)
	assert.True(t, errors.Is(err, session.ErrClosed), "%v", err)
	assert.Nil(t, out)
}

// Conversations run in parallel, each in its own session, each with its
// own loop through the SDK.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := newAdapter(t)
	type conv struct {
		api    *fakeAPI
		client anthropic.Client
		answer string
	}
	runs := make([]*conv, 4)
	for i := range runs {
		api, client := newFakeAPI(t)
		api.reply(
			toolUse("msg_set", [3]string{"toolu_set", agent.ToolName, input(fmt.Sprintf("v = %d", i))}),
			toolUse("msg_get", [3]string{"toolu_get", agent.ToolName, input("v * 100")}),
			final("msg_end", "Done."),
		)
		runs[i] = &conv{api: api, client: client}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, r := range runs {
		wg.Go(func() {
			r.answer, _, errs[i] = run(r.client, ad, fmt.Sprintf("par-%d", i), user("Go."))
		})
	}
	wg.Wait()
	for i, r := range runs {
		require.NoError(t, errs[i], "par-%d", i)
		assert.Equal(t, "Done.", r.answer)
		out, isError := toolResult(t, r.api.request(2), "toolu_get")
		assert.Equal(t, fmt.Sprint(i*100), out, "par-%d", i)
		assert.False(t, isError)
	}
}
