package montyopenai_test

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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montyopenai "github.com/monty-go/monty/session/agent/adapters/openai"
	"github.com/monty-go/monty/session/store/memstore"
)

// newAdapter returns an adapter over an executor whose registry offers
// double(n) and whose sessions live in memory.
func newAdapter(t *testing.T) (*montyopenai.Adapter, *agent.Executor) {
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
	return montyopenai.New(exec), exec
}

// fakeAPI is a local OpenAI API: it answers each request with the next of
// its replies (JSON in the shape the API returns) and keeps the request
// bodies for the test to check.
type fakeAPI struct {
	t    *testing.T
	path string // the endpoint the SDK must call

	mu       sync.Mutex
	replies  []string
	requests []map[string]any
}

func newFakeAPI(t *testing.T, path string) (*fakeAPI, openai.Client) {
	f := &fakeAPI{t: t, path: path}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return f, client
}

// reply queues replies.
func (f *fakeAPI) reply(bodies ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, bodies...)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != f.path || r.Header.Get("Authorization") != "Bearer test" {
		http.Error(w, `{"error":{"message":"unexpected request `+r.Method+" "+r.URL.Path+`","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	f.requests = append(f.requests, req)
	if len(f.replies) == 0 {
		http.Error(w, `{"error":{"message":"no reply queued","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, f.replies[0])
	f.replies = f.replies[1:]
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

// args is execute_python's arguments for code, as the model writes them
// in a tool call (a JSON string holding a JSON object).
func args(code string) string {
	return jsonString(`{"code": ` + jsonString(code) + `}`)
}

// --- Chat Completions ---

// chatToolCalls is a chat.completion whose assistant message calls tools;
// each call is {id, name, arguments (a JSON string literal)}.
func chatToolCalls(id string, calls ...[3]string) string {
	var tc []string
	for _, c := range calls {
		tc = append(tc, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, c[0], c[1], c[2]))
	}
	return `{"id":"` + id + `","object":"chat.completion","created":1735689600,"model":"gpt-4o-2024-08-06",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[],` +
		`"tool_calls":[` + strings.Join(tc, ",") + `]},"logprobs":null,"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":812,"completion_tokens":31,"total_tokens":843},"service_tier":"default","system_fingerprint":"fp_test"}`
}

// chatFinal is a chat.completion with the model's final answer.
func chatFinal(id, text string) string {
	return `{"id":"` + id + `","object":"chat.completion","created":1735689601,"model":"gpt-4o-2024-08-06",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + jsonString(text) + `,"refusal":null,"annotations":[]},` +
		`"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":860,"completion_tokens":12,"total_tokens":872},"service_tier":"default","system_fingerprint":"fp_test"}`
}

// chatLoop is an agent loop over Chat Completions: it sends the messages,
// answers tool calls through the adapter until the model answers, and
// returns the answer and the messages with the turn appended.
func chatLoop(t *testing.T, client openai.Client, ad *montyopenai.Adapter, conversation string, msgs []openai.ChatCompletionMessageParamUnion) (string, []openai.ChatCompletionMessageParamUnion) {
	t.Helper()
	ctx := context.Background()
	for range 5 {
		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    openai.ChatModelGPT4o,
			Messages: msgs,
			Tools:    ad.ChatTools(),
		})
		require.NoError(t, err)
		require.NotEmpty(t, comp.Choices)
		msg := comp.Choices[0].Message
		msgs = append(msgs, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			return msg.Content, msgs
		}
		answers, err := ad.HandleChat(ctx, conversation, msg)
		require.NoError(t, err, "a tool call must not end the loop")
		require.Len(t, answers, len(msg.ToolCalls))
		msgs = append(msgs, answers...)
	}
	t.Fatal("the model did not answer in 5 rounds")
	return "", nil
}

// messages returns the messages of a Chat Completions request body.
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

// toolMessage finds the tool message answering callID in a request.
func toolMessage(t *testing.T, req map[string]any, callID string) string {
	t.Helper()
	for _, m := range messages(t, req) {
		if m["role"] == "tool" && m["tool_call_id"] == callID {
			content, ok := m["content"].(string)
			require.True(t, ok, "tool message content is a string: %v", m)
			return content
		}
	}
	t.Fatalf("no tool message for %s in %v", callID, req["messages"])
	return ""
}

func user(text string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}
}

func TestChatToolsReachTheAPI(t *testing.T) {
	ad, exec := newAdapter(t)
	api, client := newFakeAPI(t, "/chat/completions")
	api.reply(chatFinal("chatcmpl-0", "Hello."))
	answer, _ := chatLoop(t, client, ad, "c0", user("hi"))
	assert.Equal(t, "Hello.", answer)

	tools, ok := api.request(0)["tools"].([]any)
	require.True(t, ok)
	require.Len(t, tools, 2)
	for i, want := range []agent.Tool{exec.Tool(), exec.ResumeTool()} {
		tool := tools[i].(map[string]any)
		assert.Equal(t, "function", tool["type"])
		fn := tool["function"].(map[string]any)
		assert.Equal(t, want.Name, fn["name"])
		assert.Equal(t, want.Description, fn["description"])
		wantParams, _ := json.Marshal(json.RawMessage(want.Parameters))
		gotParams, _ := json.Marshal(fn["parameters"])
		assert.JSONEq(t, string(wantParams), string(gotParams))
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, tools[0].(map[string]any)["function"].(map[string]any)["description"], "double")
}

func TestChatGoFunction(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/chat/completions")
	api.reply(
		chatToolCalls("chatcmpl-1", [3]string{"call_go", agent.ToolName, args("print('double is', double(21))")}),
		chatFinal("chatcmpl-2", "Double 21 is 42."),
	)
	answer, _ := chatLoop(t, client, ad, "conv-go", user("What is double 21?"))
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.count())
	out := toolMessage(t, api.request(1), "call_go")
	assert.Contains(t, out, "[double returned 42]")
	assert.Contains(t, out, "double is 42")
	// The assistant message with its tool call goes back before the answer.
	msgs := messages(t, api.request(1))
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1]["role"])
	assert.Equal(t, "call_go", msgs[1]["tool_calls"].([]any)[0].(map[string]any)["id"])
}

func TestChatStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/chat/completions")

	// Turn 1 of conversation A sets a variable.
	api.reply(
		chatToolCalls("chatcmpl-1", [3]string{"call_set", agent.ToolName, args("secret = double(20) + 2\nprint('set')")}),
		chatFinal("chatcmpl-2", "Stored."),
	)
	answer, history := chatLoop(t, client, ad, "conv-a", user("Remember a number."))
	assert.Equal(t, "Stored.", answer)
	assert.Contains(t, toolMessage(t, api.request(1), "call_set"), "set")

	// Turn 2 of conversation A reads it.
	api.reply(
		chatToolCalls("chatcmpl-3", [3]string{"call_get", agent.ToolName, args("secret * 10")}),
		chatFinal("chatcmpl-4", "It is 420."),
	)
	history = append(history, openai.UserMessage("What is ten times it?"))
	answer, _ = chatLoop(t, client, ad, "conv-a", history)
	assert.Equal(t, "It is 420.", answer)
	assert.Equal(t, "420", toolMessage(t, api.request(3), "call_get"))

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	api.reply(
		chatToolCalls("chatcmpl-5", [3]string{"call_other", agent.ToolName, args("secret")}),
		chatFinal("chatcmpl-6", "There is no number here."),
	)
	answer, _ = chatLoop(t, client, ad, "conv-b", user("What number did I give you?"))
	assert.Equal(t, "There is no number here.", answer)
	out := toolMessage(t, api.request(5), "call_other")
	assert.Contains(t, out, "NameError")
	assert.Contains(t, out, "secret")
}

func TestChatExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/chat/completions")
	api.reply(
		chatToolCalls("chatcmpl-1", [3]string{"call_div", agent.ToolName, args("total = 10\ntotal / 0")}),
		chatToolCalls("chatcmpl-2", [3]string{"call_fix", agent.ToolName, args("total / 4")}),
		chatFinal("chatcmpl-3", "It is 2.5."),
	)
	answer, _ := chatLoop(t, client, ad, "conv-err", user("Divide."))
	assert.Equal(t, "It is 2.5.", answer)
	require.Equal(t, 3, api.count())
	out := toolMessage(t, api.request(1), "call_div")
	assert.Contains(t, out, "Traceback")
	assert.Contains(t, out, "ZeroDivisionError")
	// A failed call leaves the session as it was: total is not defined.
	assert.Contains(t, toolMessage(t, api.request(2), "call_fix"), "NameError")
}

func TestChatSeveralCallsBadArgsAndUnknownTool(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/chat/completions")
	api.reply(
		chatToolCalls("chatcmpl-1",
			[3]string{"call_1", agent.ToolName, args("n = 5")},
			[3]string{"call_2", agent.ToolName, args("n + 1")},
			[3]string{"call_3", agent.ToolName, jsonString(`{"source": "n"}`)},
			[3]string{"call_4", "search_web", jsonString(`{"q": "monty"}`)},
			[3]string{"call_5", agent.ResumeToolName, jsonString(`{"run_id": "nope", "results": []}`)},
		),
		chatFinal("chatcmpl-2", "Done."),
	)
	answer, _ := chatLoop(t, client, ad, "conv-many", user("Go."))
	assert.Equal(t, "Done.", answer)
	req := api.request(1)
	assert.Equal(t, montyopenai.NoOutput, toolMessage(t, req, "call_1"))
	assert.Equal(t, "6", toolMessage(t, req, "call_2"))
	assert.Contains(t, toolMessage(t, req, "call_3"), `"code" is required`)
	assert.Contains(t, toolMessage(t, req, "call_4"), `Unknown tool "search_web"`)
	assert.Contains(t, toolMessage(t, req, "call_5"), `run_id "nope" is not paused`)
	// The answers follow the calls' order.
	msgs := messages(t, req)
	require.Len(t, msgs, 7)
	for i, id := range []string{"call_1", "call_2", "call_3", "call_4", "call_5"} {
		assert.Equal(t, id, msgs[2+i]["tool_call_id"])
	}
}

// --- Responses ---

// respFunctionCalls is a response whose output items call functions;
// each call is {call_id, name, arguments (a JSON string literal)}.
func respFunctionCalls(id string, calls ...[3]string) string {
	items := []string{`{"id":"rs_` + id + `","type":"reasoning","summary":[]}`}
	for i, c := range calls {
		items = append(items, fmt.Sprintf(`{"id":"fc_%s_%d","type":"function_call","status":"completed","call_id":%q,"name":%q,"arguments":%s}`, id, i, c[0], c[1], c[2]))
	}
	return response(id, strings.Join(items, ","))
}

// respFinal is a response with the model's final answer.
func respFinal(id, text string) string {
	return response(id, `{"id":"msg_`+id+`","type":"message","status":"completed","role":"assistant",`+
		`"content":[{"type":"output_text","text":`+jsonString(text)+`,"annotations":[],"logprobs":[]}]}`)
}

// response is a Responses API response with output items.
func response(id, output string) string {
	return `{"id":"` + id + `","object":"response","created_at":1735689600,"status":"completed","background":false,` +
		`"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1-2025-04-14",` +
		`"output":[` + output + `],"parallel_tool_calls":true,"previous_response_id":null,` +
		`"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,` +
		`"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled",` +
		`"usage":{"input_tokens":812,"input_tokens_details":{"cached_tokens":0},"output_tokens":31,` +
		`"output_tokens_details":{"reasoning_tokens":0},"total_tokens":843},"user":null,"metadata":{}}`
}

// responsesLoop is an agent loop over the Responses API, chaining the
// requests with previous_response_id: it sends input, answers function
// calls through the adapter until the model answers, and returns the
// answer and the last response's id.
func responsesLoop(t *testing.T, client openai.Client, ad *montyopenai.Adapter, conversation, previous, input string) (string, string) {
	t.Helper()
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model: openai.ChatModelGPT4_1,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		Tools: ad.ResponseTools(),
	}
	if previous != "" {
		params.PreviousResponseID = openai.String(previous)
	}
	for range 5 {
		resp, err := client.Responses.New(ctx, params)
		require.NoError(t, err)
		outputs, err := ad.HandleResponse(ctx, conversation, resp)
		require.NoError(t, err, "a function call must not end the loop")
		if len(outputs) == 0 {
			return resp.OutputText(), resp.ID
		}
		params.PreviousResponseID = openai.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
	}
	t.Fatal("the model did not answer in 5 rounds")
	return "", ""
}

// functionOutput finds the function_call_output answering callID in a
// request's input, and checks the request continues response previous.
func functionOutput(t *testing.T, req map[string]any, previous, callID string) string {
	t.Helper()
	assert.Equal(t, previous, req["previous_response_id"])
	input, ok := req["input"].([]any)
	require.True(t, ok, "input is a list of items: %v", req["input"])
	for _, it := range input {
		item := it.(map[string]any)
		if item["type"] == "function_call_output" && item["call_id"] == callID {
			out, ok := item["output"].(string)
			require.True(t, ok, "output is a string: %v", item)
			return out
		}
	}
	t.Fatalf("no function_call_output for %s in %v", callID, input)
	return ""
}

func TestResponseToolsReachTheAPI(t *testing.T) {
	ad, exec := newAdapter(t)
	api, client := newFakeAPI(t, "/responses")
	api.reply(respFinal("resp_0", "Hello."))
	answer, _ := responsesLoop(t, client, ad, "r0", "", "hi")
	assert.Equal(t, "Hello.", answer)

	tools, ok := api.request(0)["tools"].([]any)
	require.True(t, ok)
	require.Len(t, tools, 2)
	for i, want := range []agent.Tool{exec.Tool(), exec.ResumeTool()} {
		tool := tools[i].(map[string]any)
		assert.Equal(t, "function", tool["type"])
		assert.Equal(t, want.Name, tool["name"])
		assert.Equal(t, want.Description, tool["description"])
		assert.Equal(t, false, tool["strict"])
		wantParams, _ := json.Marshal(json.RawMessage(want.Parameters))
		gotParams, _ := json.Marshal(tool["parameters"])
		assert.JSONEq(t, string(wantParams), string(gotParams))
	}
}

func TestResponsesGoFunction(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/responses")
	api.reply(
		respFunctionCalls("resp_1", [3]string{"call_go", agent.ToolName, args("print('double is', double(21))")}),
		respFinal("resp_2", "Double 21 is 42."),
	)
	answer, _ := responsesLoop(t, client, ad, "conv-go", "", "What is double 21?")
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.count())
	out := functionOutput(t, api.request(1), "resp_1", "call_go")
	assert.Contains(t, out, "[double returned 42]")
	assert.Contains(t, out, "double is 42")
}

func TestResponsesStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/responses")

	api.reply(
		respFunctionCalls("resp_1", [3]string{"call_set", agent.ToolName, args("secret = double(20) + 2\nprint('set')")}),
		respFinal("resp_2", "Stored."),
	)
	answer, last := responsesLoop(t, client, ad, "conv-a", "", "Remember a number.")
	assert.Equal(t, "Stored.", answer)
	assert.Contains(t, functionOutput(t, api.request(1), "resp_1", "call_set"), "set")

	api.reply(
		respFunctionCalls("resp_3", [3]string{"call_get", agent.ToolName, args("secret * 10")}),
		respFinal("resp_4", "It is 420."),
	)
	answer, _ = responsesLoop(t, client, ad, "conv-a", last, "What is ten times it?")
	assert.Equal(t, "It is 420.", answer)
	assert.Equal(t, "resp_2", api.request(2)["previous_response_id"])
	assert.Equal(t, "420", functionOutput(t, api.request(3), "resp_3", "call_get"))

	api.reply(
		respFunctionCalls("resp_5", [3]string{"call_other", agent.ToolName, args("secret")}),
		respFinal("resp_6", "There is no number here."),
	)
	answer, _ = responsesLoop(t, client, ad, "conv-b", "", "What number did I give you?")
	assert.Equal(t, "There is no number here.", answer)
	out := functionOutput(t, api.request(5), "resp_5", "call_other")
	assert.Contains(t, out, "NameError")
	assert.Contains(t, out, "secret")
}

func TestResponsesExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t, "/responses")
	api.reply(
		respFunctionCalls("resp_1", [3]string{"call_raise", agent.ToolName, args("raise ValueError('no such order: 7')")}),
		respFunctionCalls("resp_2",
			[3]string{"call_a", agent.ToolName, args("x = 3")},
			[3]string{"call_b", "search_web", jsonString(`{}`)},
			[3]string{"call_c", agent.ToolName, args("x * double(x)")},
		),
		respFinal("resp_3", "Order 7 does not exist; 18."),
	)
	answer, _ := responsesLoop(t, client, ad, "conv-err", "", "Look up order 7.")
	assert.Equal(t, "Order 7 does not exist; 18.", answer)
	require.Equal(t, 3, api.count())
	out := functionOutput(t, api.request(1), "resp_1", "call_raise")
	assert.Contains(t, out, "Traceback")
	assert.Contains(t, out, "ValueError: no such order: 7")
	req := api.request(2)
	assert.Equal(t, montyopenai.NoOutput, functionOutput(t, req, "resp_2", "call_a"))
	assert.Contains(t, functionOutput(t, req, "resp_2", "call_b"), `Unknown tool "search_web"`)
	assert.Contains(t, functionOutput(t, req, "resp_2", "call_c"), "\n18")
	input := req["input"].([]any)
	require.Len(t, input, 3)
	for i, id := range []string{"call_a", "call_b", "call_c"} {
		assert.Equal(t, id, input[i].(map[string]any)["call_id"])
	}
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := newAdapter(t)
	var msg openai.ChatCompletionMessage
	require.NoError(t, json.Unmarshal([]byte(`{"role":"assistant","content":null,"refusal":null,`+
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"execute_python","arguments":"{\"code\": \"1 + 1\"}"}}]}`), &msg))
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(respFunctionCalls("resp_1", [3]string{"call_1", agent.ToolName, args("1 + 1")})), &resp))

	out, err := ad.HandleChat(context.Background(), "ok", msg)
	require.NoError(t, err)
	require.Len(t, out, 1)
	items, err := ad.HandleResponse(context.Background(), "ok", &resp)
	require.NoError(t, err)
	require.Len(t, items, 1)

	// A conversation key that is no thread key.
	for _, key := range []string{"", "a/b", "../x"} {
		_, err = ad.HandleChat(context.Background(), key, msg)
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
	}

	// The caller's context ended.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err = ad.HandleChat(ctx, "ok", msg)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, out)
	items, err = ad.HandleResponse(ctx, "ok", &resp)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, items)

	// The executor is closed.
	exec.Close()
	_, err = ad.HandleChat(context.Background(), "closed", msg)
	assert.True(t, errors.Is(err, session.ErrClosed), "%v", err)
	_, err = ad.HandleResponse(context.Background(), "closed", &resp)
	assert.True(t, errors.Is(err, session.ErrClosed), "%v", err)
}

// Conversations run in parallel, each in its own session.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := newAdapter(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Go(func() {
			conv := fmt.Sprintf("par-%d", i)
			if _, err := ad.Call(ctx, conv, agent.ToolName, fmt.Sprintf(`{"code": "v = %d"}`, i)); err != nil {
				errs <- err
				return
			}
			out, err := ad.Call(ctx, conv, agent.ToolName, `{"code": "v * 100"}`)
			if err == nil && out != fmt.Sprint(i*100) {
				err = fmt.Errorf("%s: got %q", conv, out)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A run paused at a client tool goes on with resume_python, both answered
// through the adapter in the conversation's session.
func TestClientToolPauseAndResume(t *testing.T) {
	ad, _ := newAdapter(t)
	ctx := context.Background()
	out, err := ad.Call(ctx, "conv-pause", agent.ToolName,
		`{"code": "city = ask_user('Which city?')\ncity.upper()", "client_tools": [{"name": "ask_user"}]}`)
	require.NoError(t, err)
	runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(out)
	callID := regexp.MustCompile(`- id "([^"]+)": ask_user\('Which city\?'\)`).FindStringSubmatch(out)
	require.NotNil(t, runID, out)
	require.NotNil(t, callID, out)

	// Another conversation cannot resume it.
	res, _ := json.Marshal(map[string]any{"run_id": runID[1], "results": []any{map[string]any{"id": callID[1], "value": "Paris"}}})
	out, err = ad.Call(ctx, "conv-other", agent.ResumeToolName, string(res))
	require.NoError(t, err)
	assert.Contains(t, out, "is not paused")

	out, err = ad.Call(ctx, "conv-pause", agent.ResumeToolName, string(res))
	require.NoError(t, err)
	assert.Equal(t, "'PARIS'", out)
}
