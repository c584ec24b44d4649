package montygenai_test

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montygenai "github.com/monty-go/monty/session/agent/adapters/genai"
	"github.com/monty-go/monty/session/store/memstore"
)

// model is the model the tests ask for; the fake API serves only it.
const model = "gemini-2.5-flash"

// newAdapter returns an adapter over an executor whose registry offers
// double(n) and whose sessions live in memory.
func newAdapter(t *testing.T) (*montygenai.Adapter, *agent.Executor) {
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
	return montygenai.New(exec), exec
}

// fakeAPI is a local Gemini API: it answers each generateContent request
// with the next of its replies (JSON in the shape the API returns, or a
// function of the request that writes it) and keeps the request bodies
// for the test to check.
type fakeAPI struct {
	t *testing.T

	mu       sync.Mutex
	replies  []func(req map[string]any) string
	requests []map[string]any
}

func newFakeAPI(t *testing.T) (*fakeAPI, *genai.Client) {
	f := &fakeAPI{t: t}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend:     genai.BackendGeminiAPI,
		APIKey:      "test",
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	require.NoError(t, err)
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
	fail := func(code int, status, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"error":{"code":%d,"message":%s,"status":%q}}`, code, jsonString(message), status)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/"+model+":generateContent" {
		fail(http.StatusNotFound, "NOT_FOUND", "unexpected request "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("X-Goog-Api-Key") != "test" {
		fail(http.StatusUnauthorized, "UNAUTHENTICATED", "API key not valid")
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "bad JSON")
		return
	}
	f.requests = append(f.requests, req)
	if len(f.replies) == 0 {
		fail(http.StatusInternalServerError, "INTERNAL", "no reply queued")
		return
	}
	next := f.replies[0]
	f.replies = f.replies[1:]
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = io.WriteString(w, next(req))
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

// code is execute_python's arguments for code, as the model writes them
// in a function call (a JSON object).
func code(src string) string {
	return `{"code": ` + jsonString(src) + `}`
}

// functionCalls is a response whose candidate calls functions: a text
// part, then a function call part per call, each {id ("" for none, as
// the Gemini API often sends), name, args (a JSON object)}; the first
// call carries a thought signature, as thinking models send it.
func functionCalls(id string, calls ...[3]string) string {
	parts := []string{`{"text":"I'll work that out with Python."}`}
	for i, c := range calls {
		call := fmt.Sprintf(`"name":%q,"args":%s`, c[1], c[2])
		if c[0] != "" {
			call = fmt.Sprintf(`"id":%q,`, c[0]) + call
		}
		sig := ""
		if i == 0 {
			sig = `,"thoughtSignature":"c2lnX3Rlc3Q="`
		}
		parts = append(parts, `{"functionCall":{`+call+`}`+sig+`}`)
	}
	return response(id, strings.Join(parts, ","))
}

// final is a response with the model's final answer.
func final(id, text string) string {
	return response(id, `{"text":`+jsonString(text)+`}`)
}

// response is a generateContent response with one candidate whose content
// has parts.
func response(id, parts string) string {
	return `{"candidates":[{"content":{"parts":[` + parts + `],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":1532,"candidatesTokenCount":64,"totalTokenCount":1660,` +
		`"promptTokensDetails":[{"modality":"TEXT","tokenCount":1532}],"thoughtsTokenCount":64},` +
		`"modelVersion":"` + model + `","responseId":"` + id + `"}`
}

// loop is an agent loop over generateContent: it sends the contents,
// answers function calls through the adapter until the model answers, and
// returns the answer and the contents with the turn appended.
func loop(t *testing.T, client *genai.Client, ad *montygenai.Adapter, conversation string, contents []*genai.Content) (string, []*genai.Content) {
	t.Helper()
	answer, contents, err := run(client, ad, conversation, contents)
	require.NoError(t, err)
	return answer, contents
}

// run is loop's body, which reports what went wrong as an error, for
// goroutines other than the test's.
func run(client *genai.Client, ad *montygenai.Adapter, conversation string, contents []*genai.Content) (string, []*genai.Content, error) {
	ctx := context.Background()
	for range 5 {
		resp, err := client.Models.GenerateContent(ctx, model, contents, &genai.GenerateContentConfig{Tools: ad.Tools()})
		if err != nil {
			return "", nil, err
		}
		if len(resp.Candidates) == 0 {
			return "", nil, errors.New("no candidate")
		}
		contents = append(contents, resp.Candidates[0].Content)
		parts, err := ad.Handle(ctx, conversation, resp)
		if err != nil {
			return "", nil, fmt.Errorf("a function call must not end the loop: %w", err)
		}
		if calls := len(resp.FunctionCalls()); len(parts) != calls {
			return "", nil, fmt.Errorf("%d function responses for %d function calls", len(parts), calls)
		}
		if len(parts) == 0 {
			return resp.Text(), contents, nil
		}
		contents = append(contents, genai.NewContentFromParts(parts, genai.RoleUser))
	}
	return "", nil, errors.New("the model did not answer in 5 rounds")
}

// contents returns the contents of a request body.
func contents(t *testing.T, req map[string]any) []map[string]any {
	t.Helper()
	raw, ok := req["contents"].([]any)
	require.True(t, ok, "contents in %v", req)
	out := make([]map[string]any, len(raw))
	for i, c := range raw {
		out[i] = c.(map[string]any)
	}
	return out
}

// parts returns the parts of a content in a request body.
func parts(t *testing.T, c map[string]any) []map[string]any {
	t.Helper()
	raw, ok := c["parts"].([]any)
	require.True(t, ok, "parts in %v", c)
	out := make([]map[string]any, len(raw))
	for i, p := range raw {
		out[i] = p.(map[string]any)
	}
	return out
}

// functionResponse finds the function response answering the call with
// id in a request's last content (a user content) and returns its text
// and whether it is an error: the response has one key, "output" or
// "error".
func functionResponse(t *testing.T, req map[string]any, id string) (string, bool) {
	t.Helper()
	all := contents(t, req)
	last := all[len(all)-1]
	require.Equal(t, "user", last["role"])
	for _, p := range parts(t, last) {
		fr, _ := p["functionResponse"].(map[string]any)
		if fr == nil || fr["id"] != id {
			continue
		}
		resp, ok := fr["response"].(map[string]any)
		require.True(t, ok, "a response object: %v", fr)
		require.Len(t, resp, 1, "one key: %v", resp)
		if text, ok := resp["error"].(string); ok {
			return text, true
		}
		text, ok := resp["output"].(string)
		require.True(t, ok, "output or error: %v", resp)
		return text, false
	}
	t.Fatalf("no function response for %s in %v", id, last)
	return "", false
}

func user(text string) []*genai.Content {
	return []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}
}

func TestToolsReachTheAPI(t *testing.T) {
	ad, exec := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(final("resp_0", "Hello."))
	answer, _ := loop(t, client, ad, "c0", user("hi"))
	assert.Equal(t, "Hello.", answer)

	tools, ok := api.request(0)["tools"].([]any)
	require.True(t, ok)
	require.Len(t, tools, 1)
	decls, ok := tools[0].(map[string]any)["functionDeclarations"].([]any)
	require.True(t, ok, "%v", tools[0])
	require.Len(t, decls, 2)
	for i, want := range []agent.Tool{exec.Tool(), exec.ResumeTool()} {
		decl := decls[i].(map[string]any)
		assert.Equal(t, want.Name, decl["name"])
		assert.Equal(t, want.Description, decl["description"])
		assert.NotContains(t, decl, "parameters", "parameters and parametersJsonSchema exclude each other")
		gotSchema, _ := json.Marshal(decl["parametersJsonSchema"])
		assert.JSONEq(t, string(want.Parameters), string(gotSchema))
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, decls[0].(map[string]any)["description"], "double")
}

func TestGoFunction(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		functionCalls("resp_1", [3]string{"call_go", agent.ToolName, code("print('double is', double(21))")}),
		final("resp_2", "Double 21 is 42."),
	)
	answer, _ := loop(t, client, ad, "conv-go", user("What is double 21?"))
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.count())
	out, isError := functionResponse(t, api.request(1), "call_go")
	assert.False(t, isError)
	assert.Contains(t, out, "[double returned 42]")
	assert.Contains(t, out, "double is 42")
	// The model's content with its function call (and thought signature)
	// goes back before the function response, which names the function.
	all := contents(t, api.request(1))
	require.Len(t, all, 3)
	assert.Equal(t, "model", all[1]["role"])
	call := parts(t, all[1])[1]
	assert.Equal(t, "c2lnX3Rlc3Q=", call["thoughtSignature"])
	assert.Equal(t, "call_go", call["functionCall"].(map[string]any)["id"])
	answerPart := parts(t, all[2])
	require.Len(t, answerPart, 1)
	assert.Equal(t, agent.ToolName, answerPart[0]["functionResponse"].(map[string]any)["name"])
}

// The adapter's parts go back through a genai.Chat too, which keeps the
// history itself.
func TestChat(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		functionCalls("resp_1", [3]string{"call_chat", agent.ToolName, code("double(4)")}),
		final("resp_2", "It is 8."),
	)
	ctx := context.Background()
	chat, err := client.Chats.Create(ctx, model, &genai.GenerateContentConfig{Tools: ad.Tools()}, nil)
	require.NoError(t, err)
	resp, err := chat.SendMessage(ctx, genai.Part{Text: "Double 4."})
	require.NoError(t, err)
	answers, err := ad.Handle(ctx, "conv-chat", resp)
	require.NoError(t, err)
	require.Len(t, answers, 1)
	resp, err = chat.Send(ctx, answers...)
	require.NoError(t, err)
	assert.Equal(t, "It is 8.", resp.Text())
	out, isError := functionResponse(t, api.request(1), "call_chat")
	assert.False(t, isError)
	assert.Contains(t, out, "8")
	assert.Len(t, contents(t, api.request(1)), 3)
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)

	// Turn 1 of conversation A sets a variable.
	api.reply(
		functionCalls("resp_1", [3]string{"call_set", agent.ToolName, code("secret = double(20) + 2\nprint('set')")}),
		final("resp_2", "Stored."),
	)
	answer, history := loop(t, client, ad, "conv-a", user("Remember a number."))
	assert.Equal(t, "Stored.", answer)
	out, _ := functionResponse(t, api.request(1), "call_set")
	assert.Contains(t, out, "set")

	// Turn 2 of conversation A reads it.
	api.reply(
		functionCalls("resp_3", [3]string{"call_get", agent.ToolName, code("secret * 10")}),
		final("resp_4", "It is 420."),
	)
	history = append(history, genai.NewContentFromText("What is ten times it?", genai.RoleUser))
	answer, _ = loop(t, client, ad, "conv-a", history)
	assert.Equal(t, "It is 420.", answer)
	out, isError := functionResponse(t, api.request(3), "call_get")
	assert.Equal(t, "420", out)
	assert.False(t, isError)
	assert.Len(t, contents(t, api.request(3)), 7, "the whole conversation went back")

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	api.reply(
		functionCalls("resp_5", [3]string{"call_other", agent.ToolName, code("secret")}),
		final("resp_6", "There is no number here."),
	)
	answer, _ = loop(t, client, ad, "conv-b", user("What number did I give you?"))
	assert.Equal(t, "There is no number here.", answer)
	out, isError = functionResponse(t, api.request(5), "call_other")
	assert.True(t, isError)
	assert.Contains(t, out, "NameError")
	assert.Contains(t, out, "secret")
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		functionCalls("resp_1", [3]string{"call_div", agent.ToolName, code("total = 10\ntotal / 0")}),
		functionCalls("resp_2", [3]string{"call_raise", agent.ToolName, code("raise ValueError('no such order: 7')")}),
		functionCalls("resp_3", [3]string{"call_fix", agent.ToolName, code("total = 10\ntotal / 4")}),
		final("resp_4", "It is 2.5."),
	)
	answer, _ := loop(t, client, ad, "conv-err", user("Divide."))
	assert.Equal(t, "It is 2.5.", answer)
	require.Equal(t, 4, api.count())
	out, isError := functionResponse(t, api.request(1), "call_div")
	assert.True(t, isError)
	assert.Contains(t, out, "Traceback")
	assert.Contains(t, out, "ZeroDivisionError")
	out, isError = functionResponse(t, api.request(2), "call_raise")
	assert.True(t, isError)
	assert.Contains(t, out, "ValueError: no such order: 7")
	// The loop goes on, and the session is usable.
	out, isError = functionResponse(t, api.request(3), "call_fix")
	assert.False(t, isError)
	assert.Equal(t, "2.5", out)
}

// A failed call leaves the session as it was.
func TestFailedCallKeepsNoState(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		functionCalls("resp_1", [3]string{"call_div", agent.ToolName, code("total = 10\ntotal / 0")}),
		functionCalls("resp_2", [3]string{"call_read", agent.ToolName, code("total")}),
		final("resp_3", "Nothing was kept."),
	)
	answer, _ := loop(t, client, ad, "conv-kept", user("Divide."))
	assert.Equal(t, "Nothing was kept.", answer)
	out, isError := functionResponse(t, api.request(2), "call_read")
	assert.True(t, isError)
	assert.Contains(t, out, "NameError")
}

func TestSeveralCallsBadArgsAndUnknownFunction(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	api.reply(
		functionCalls("resp_1",
			[3]string{"call_1", agent.ToolName, code("n = 5")},
			[3]string{"call_2", agent.ToolName, code("n + 1")},
			[3]string{"call_3", agent.ToolName, `{"source": "n"}`},
			[3]string{"call_4", "search_web", `{"q": "monty"}`},
			[3]string{"call_5", agent.ResumeToolName, `{"run_id": "nope", "results": []}`},
			[3]string{"call_6", agent.ToolName, code("double(n)")},
			[3]string{"", agent.ToolName, code("n * 3")},
		),
		final("resp_2", "Done."),
	)
	answer, _ := loop(t, client, ad, "conv-many", user("Go."))
	assert.Equal(t, "Done.", answer)
	req := api.request(1)
	for _, c := range []struct {
		id, want string
		isError  bool
	}{
		{"call_1", montygenai.NoOutput, false},
		{"call_2", "6", false},
		{"call_3", `"code" is required`, true},
		{"call_4", `Unknown function "search_web"`, true},
		{"call_5", `run_id "nope" is not paused`, true},
		{"call_6", "10", false},
	} {
		out, isError := functionResponse(t, req, c.id)
		assert.Contains(t, out, c.want, c.id)
		assert.Equal(t, c.isError, isError, c.id)
	}
	// One user content answers them all, in the calls' order, each with
	// the call's name and ID (none for the call that had none).
	all := contents(t, req)
	require.Len(t, all, 3)
	answers := parts(t, all[2])
	require.Len(t, answers, 7)
	for i, want := range [][2]string{
		{"call_1", agent.ToolName}, {"call_2", agent.ToolName}, {"call_3", agent.ToolName},
		{"call_4", "search_web"}, {"call_5", agent.ResumeToolName}, {"call_6", agent.ToolName},
		{"", agent.ToolName},
	} {
		fr, ok := answers[i]["functionResponse"].(map[string]any)
		require.True(t, ok, "part %d: %v", i, answers[i])
		id, _ := fr["id"].(string)
		assert.Equal(t, want[0], id, "part %d", i)
		assert.Equal(t, want[1], fr["name"], "part %d", i)
	}
	assert.Equal(t, map[string]any{"output": "15"}, answers[6]["functionResponse"].(map[string]any)["response"])
}

// A run paused at a client tool goes on when the model calls
// resume_python, both answered through the adapter in the conversation's
// session; the model reads run_id and the call's id from the paused
// output, as a real one does.
func TestPauseAndResume(t *testing.T) {
	ad, _ := newAdapter(t)
	api, client := newFakeAPI(t)
	var paused string
	api.reply(functionCalls("resp_1", [3]string{"call_run", agent.ToolName,
		`{"code": "city = ask_user('Which city?')\ncity.upper()", "client_tools": [{"name": "ask_user"}]}`}))
	api.replyWith(func(req map[string]any) string {
		// The model asks the user (a function of its own, answered here)
		// and resumes the run with the answer.
		paused, _ = functionResponseUnlocked(req, "call_run")
		runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(paused)
		callID := regexp.MustCompile(`- id "([^"]+)": ask_user\('Which city\?'\)`).FindStringSubmatch(paused)
		if runID == nil || callID == nil {
			return final("resp_2", "The run did not pause.")
		}
		args, _ := json.Marshal(map[string]any{"run_id": runID[1], "results": []any{map[string]any{"id": callID[1], "value": "Paris"}}})
		return functionCalls("resp_2", [3]string{"call_resume", agent.ResumeToolName, string(args)})
	})
	api.reply(final("resp_3", "PARIS it is."))

	answer, _ := loop(t, client, ad, "conv-pause", user("Shout my city."))
	assert.Equal(t, "PARIS it is.", answer)
	require.Equal(t, 3, api.count())
	out, isError := functionResponse(t, api.request(1), "call_run")
	assert.False(t, isError, "a paused run did not fail")
	assert.Contains(t, out, "ask_user")
	assert.Equal(t, paused, out)
	out, isError = functionResponse(t, api.request(2), "call_resume")
	assert.False(t, isError)
	assert.Equal(t, "'PARIS'", out)
}

// Another conversation cannot resume a conversation's paused run.
func TestResumeFromAnotherConversation(t *testing.T) {
	ad, _ := newAdapter(t)
	ctx := context.Background()
	resp, err := ad.Call(ctx, "conv-pause", agent.ToolName,
		map[string]any{"code": "ask_user('Which city?')", "client_tools": []any{map[string]any{"name": "ask_user"}}})
	require.NoError(t, err)
	out, ok := resp["output"].(string)
	require.True(t, ok, "%v", resp)
	runID := regexp.MustCompile(`run_id "([^"]+)"`).FindStringSubmatch(out)
	require.NotNil(t, runID, out)
	resp, err = ad.Call(ctx, "conv-other", agent.ResumeToolName, map[string]any{"run_id": runID[1], "results": []any{}})
	require.NoError(t, err)
	assert.NotContains(t, resp, "output")
	assert.Contains(t, resp["error"], "is not paused")
}

// functionResponseUnlocked is functionResponse for a reply function,
// which runs on the server's goroutine and must not stop the test: ""
// when it is not there.
func functionResponseUnlocked(req map[string]any, id string) (string, bool) {
	all, _ := req["contents"].([]any)
	if len(all) == 0 {
		return "", false
	}
	last, _ := all[len(all)-1].(map[string]any)
	ps, _ := last["parts"].([]any)
	for _, p := range ps {
		part, _ := p.(map[string]any)
		fr, _ := part["functionResponse"].(map[string]any)
		if fr == nil || fr["id"] != id {
			continue
		}
		resp, _ := fr["response"].(map[string]any)
		if text, ok := resp["error"].(string); ok {
			return text, true
		}
		text, _ := resp["output"].(string)
		return text, false
	}
	return "", false
}

// Arguments that cannot be JSON, or none, go back to the model too.
func TestCallArguments(t *testing.T) {
	ad, _ := newAdapter(t)
	ctx := context.Background()
	resp, err := ad.Call(ctx, "conv-args", agent.ToolName, nil)
	require.NoError(t, err)
	assert.Contains(t, resp["error"], `"code" is required`)
	resp, err = ad.Call(ctx, "conv-args", agent.ToolName, map[string]any{"code": make(chan int)})
	require.NoError(t, err)
	assert.Contains(t, resp["error"], "not JSON")
	resp, err = ad.Call(ctx, "conv-args", agent.ToolName, map[string]any{"code": "None"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"output": montygenai.NoOutput}, resp)
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := newAdapter(t)
	var resp genai.GenerateContentResponse
	require.NoError(t, json.Unmarshal([]byte(functionCalls("resp_1", [3]string{"call_1", agent.ToolName, code("1 + 1")})), &resp))

	out, err := ad.Handle(context.Background(), "ok", &resp)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, &genai.FunctionResponse{ID: "call_1", Name: agent.ToolName, Response: map[string]any{"output": "2"}}, out[0].FunctionResponse)
	for _, empty := range []*genai.GenerateContentResponse{nil, {}, {Candidates: []*genai.Candidate{nil}}, {Candidates: []*genai.Candidate{{}}}} {
		none, err := ad.Handle(context.Background(), "ok", empty)
		require.NoError(t, err)
		assert.Empty(t, none)
	}

	// A conversation key that is no thread key.
	for _, key := range []string{"", "a/b", "../x"} {
		out, err = ad.Handle(context.Background(), key, &resp)
		assert.ErrorIs(t, err, agent.ErrBadArgs, "key %q", key)
		assert.Nil(t, out)
	}

	// The caller's context ended.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err = ad.Handle(ctx, "ok", &resp)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, out)
	cause := errors.New("the user left")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	// The executor may see the context end at different points of the
	// call (it races with taking the session's turn): each must give the
	// cause.
	for range 50 {
		_, err = ad.Call(ctx, "ok", agent.ToolName, map[string]any{"code": "1"})
		require.ErrorIs(t, err, cause)
	}

	// The executor is closed.
	exec.Close()
	out, err = ad.Handle(context.Background(), "closed", &resp)
	assert.True(t, errors.Is(err, session.ErrClosed), "%v", err)
	assert.Nil(t, out)
}

// Conversations run in parallel, each in its own session, each with its
// own loop through the SDK.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := newAdapter(t)
	type conv struct {
		api    *fakeAPI
		client *genai.Client
		answer string
	}
	runs := make([]*conv, 4)
	for i := range runs {
		api, client := newFakeAPI(t)
		api.reply(
			functionCalls("resp_set", [3]string{"call_set", agent.ToolName, code(fmt.Sprintf("v = %d", i))}),
			functionCalls("resp_get", [3]string{"call_get", agent.ToolName, code("v * 100")}),
			final("resp_end", "Done."),
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
		out, isError := functionResponse(t, r.api.request(2), "call_get")
		assert.Equal(t, fmt.Sprint(i*100), out, "par-%d", i)
		assert.False(t, isError)
	}
}
