package montygenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/monty-go/monty/session/agent"
	montygenai "github.com/monty-go/monty/session/agent/adapters/genai"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// model is the model the tests ask for; the fake API serves only it.
const model = "gemini-2.5-flash"

// newFakeAPI starts a local Gemini API, which answers each
// generateContent request with the next of its replies (JSON in the shape
// the API returns, or a function of the request that writes it) and keeps
// the request bodies for the test to check, and returns a client of it.
func newFakeAPI(t *testing.T) (*agenttest.API, *genai.Client) {
	api := agenttest.NewAPI(t, agenttest.APIOptions{
		Accept: func(r *http.Request) (int, string) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/"+model+":generateContent" {
				return http.StatusNotFound, "unexpected request " + r.Method + " " + r.URL.Path
			}
			if r.Header.Get("X-Goog-Api-Key") != "test" {
				return http.StatusUnauthorized, "API key not valid"
			}
			return 0, ""
		},
		Fail: func(w http.ResponseWriter, code int, message string) {
			status := map[int]string{http.StatusNotFound: "NOT_FOUND", http.StatusUnauthorized: "UNAUTHENTICATED",
				http.StatusBadRequest: "INVALID_ARGUMENT", http.StatusInternalServerError: "INTERNAL"}[code]
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = fmt.Fprintf(w, `{"error":{"code":%d,"message":%s,"status":%q}}`, code, agenttest.JSONString(message), status)
		},
		Header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
	})
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend:     genai.BackendGeminiAPI,
		APIKey:      "test",
		HTTPOptions: genai.HTTPOptions{BaseURL: api.URL},
	})
	require.NoError(t, err)
	return api, client
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
	return response(id, `{"text":`+agenttest.JSONString(text)+`}`)
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

// functionResponse finds the function response answering the call with
// id in a request's last content (a user content) and returns its text
// and whether it is an error: the response has one key, "output" or
// "error".
func functionResponse(t *testing.T, req map[string]any, id string) (string, bool) {
	t.Helper()
	text, isError, err := findFunctionResponse(req, id)
	require.NoError(t, err)
	return text, isError
}

// findFunctionResponse is functionResponse for a reply function, which
// runs on the server's goroutine and must not stop the test: it says
// what is wrong as an error.
func findFunctionResponse(req map[string]any, id string) (text string, isError bool, err error) {
	all, _ := req["contents"].([]any)
	if len(all) == 0 {
		return "", false, errors.New("no contents")
	}
	last, _ := all[len(all)-1].(map[string]any)
	if last["role"] != "user" {
		return "", false, fmt.Errorf("the last content is no user content: %v", last)
	}
	ps, _ := last["parts"].([]any)
	for _, p := range ps {
		part, _ := p.(map[string]any)
		fr, _ := part["functionResponse"].(map[string]any)
		if fr == nil || fr["id"] != id {
			continue
		}
		resp, _ := fr["response"].(map[string]any)
		if len(resp) != 1 {
			return "", false, fmt.Errorf("no response object of one key: %v", fr)
		}
		if text, ok := resp["error"].(string); ok {
			return text, true, nil
		}
		if text, ok := resp["output"].(string); ok {
			return text, false, nil
		}
		return "", false, fmt.Errorf("no output or error: %v", resp)
	}
	return "", false, fmt.Errorf("no function response for %s in %v", id, last)
}

func user(text string) []*genai.Content {
	return []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}
}

func TestToolsReachTheAPI(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	api.Reply(final("resp_0", "Hello."))
	answer, _ := loop(t, client, ad, "c0", user("hi"))
	assert.Equal(t, "Hello.", answer)

	tools := agenttest.Objects(t, api.Request(t, 0), "tools")
	require.Len(t, tools, 1)
	decls := agenttest.Objects(t, tools[0], "functionDeclarations")
	agenttest.AssertToolObjects(t, exec.Tools(), decls, "parametersJsonSchema")
	for _, decl := range decls {
		assert.NotContains(t, decl, "parameters", "parameters and parametersJsonSchema exclude each other")
	}
	// The description briefs the model on the registered function.
	assert.Contains(t, decls[0]["description"], agenttest.FuncName)
}

func TestGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	api.Reply(
		functionCalls("resp_1", [3]string{"call_go", agent.ToolName, agenttest.Args(agenttest.CallDouble)}),
		final("resp_2", "Double 21 is 42."),
	)
	answer, _ := loop(t, client, ad, "conv-go", user("What is double 21?"))
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.Count())
	out, isError := functionResponse(t, api.Request(t, 1), "call_go")
	assert.False(t, isError)
	agenttest.AssertDoubled(t, out)
	// The model's content with its function call (and thought signature)
	// goes back before the function response, which names the function.
	all := agenttest.Objects(t, api.Request(t, 1), "contents")
	require.Len(t, all, 3)
	assert.Equal(t, "model", all[1]["role"])
	call := agenttest.Objects(t, all[1], "parts")[1]
	assert.Equal(t, "c2lnX3Rlc3Q=", call["thoughtSignature"])
	assert.Equal(t, "call_go", call["functionCall"].(map[string]any)["id"])
	answerPart := agenttest.Objects(t, all[2], "parts")
	require.Len(t, answerPart, 1)
	assert.Equal(t, agent.ToolName, answerPart[0]["functionResponse"].(map[string]any)["name"])
}

// The adapter's parts go back through a genai.Chat too, which keeps the
// history itself.
func TestChat(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	api.Reply(
		functionCalls("resp_1", [3]string{"call_chat", agent.ToolName, agenttest.Args("double(4)")}),
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
	out, isError := functionResponse(t, api.Request(t, 1), "call_chat")
	assert.False(t, isError)
	assert.Contains(t, out, "8")
	assert.Len(t, agenttest.Objects(t, api.Request(t, 1), "contents"), 3)
}

func TestStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)

	// Turn 1 of conversation A sets a variable.
	api.Reply(
		functionCalls("resp_1", [3]string{"call_set", agent.ToolName, agenttest.Args(agenttest.SetSecret)}),
		final("resp_2", "Stored."),
	)
	answer, history := loop(t, client, ad, "conv-a", user("Remember a number."))
	assert.Equal(t, "Stored.", answer)
	out, _ := functionResponse(t, api.Request(t, 1), "call_set")
	assert.Contains(t, out, "set")

	// Turn 2 of conversation A reads it.
	api.Reply(
		functionCalls("resp_3", [3]string{"call_get", agent.ToolName, agenttest.Args(agenttest.GetSecret)}),
		final("resp_4", "It is 420."),
	)
	history = append(history, genai.NewContentFromText("What is ten times it?", genai.RoleUser))
	answer, _ = loop(t, client, ad, "conv-a", history)
	assert.Equal(t, "It is 420.", answer)
	out, isError := functionResponse(t, api.Request(t, 3), "call_get")
	assert.Equal(t, agenttest.WantSecret, out)
	assert.False(t, isError)
	assert.Len(t, agenttest.Objects(t, api.Request(t, 3), "contents"), 7, "the whole conversation went back")

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	api.Reply(
		functionCalls("resp_5", [3]string{"call_other", agent.ToolName, agenttest.Args(agenttest.ReadSecret)}),
		final("resp_6", "There is no number here."),
	)
	answer, _ = loop(t, client, ad, "conv-b", user("What number did I give you?"))
	assert.Equal(t, "There is no number here.", answer)
	out, isError = functionResponse(t, api.Request(t, 5), "call_other")
	assert.True(t, isError)
	agenttest.AssertNameError(t, out)
}

func TestExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	api.Reply(
		functionCalls("resp_1", [3]string{"call_div", agent.ToolName, agenttest.Args(agenttest.DivideByZero)}),
		functionCalls("resp_2", [3]string{"call_raise", agent.ToolName, agenttest.Args(agenttest.Raise)}),
		functionCalls("resp_3", [3]string{"call_fix", agent.ToolName, agenttest.Args(agenttest.Divide)}),
		final("resp_4", "It is 2.5."),
	)
	answer, _ := loop(t, client, ad, "conv-err", user("Divide."))
	assert.Equal(t, "It is 2.5.", answer)
	require.Equal(t, 4, api.Count())
	out, isError := functionResponse(t, api.Request(t, 1), "call_div")
	assert.True(t, isError)
	agenttest.AssertTraceback(t, out, "ZeroDivisionError")
	out, isError = functionResponse(t, api.Request(t, 2), "call_raise")
	assert.True(t, isError)
	assert.Contains(t, out, agenttest.WantRaise)
	// The loop goes on, and the session is usable.
	out, isError = functionResponse(t, api.Request(t, 3), "call_fix")
	assert.False(t, isError)
	assert.Equal(t, agenttest.WantDivide, out)
}

// A failed call leaves the session as it was.
func TestFailedCallKeepsNoState(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	api.Reply(
		functionCalls("resp_1", [3]string{"call_div", agent.ToolName, agenttest.Args(agenttest.DivideByZero)}),
		functionCalls("resp_2", [3]string{"call_read", agent.ToolName, agenttest.Args("total")}),
		final("resp_3", "Nothing was kept."),
	)
	answer, _ := loop(t, client, ad, "conv-kept", user("Divide."))
	assert.Equal(t, "Nothing was kept.", answer)
	out, isError := functionResponse(t, api.Request(t, 2), "call_read")
	assert.True(t, isError)
	assert.Contains(t, out, "NameError")
}

func TestSeveralCallsBadArgsAndUnknownFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	calls := agenttest.SeveralCalls()
	calls[3].Want = `Unknown function "search_web"` // Gemini's word
	var fcs [][3]string
	for _, c := range calls {
		fcs = append(fcs, [3]string{c.ID, c.Name, c.Args})
	}
	// A last call without an ID, as the Gemini API often sends them.
	fcs = append(fcs, [3]string{"", agent.ToolName, agenttest.Args("n * 3")})
	api.Reply(functionCalls("resp_1", fcs...), final("resp_2", "Done."))
	answer, _ := loop(t, client, ad, "conv-many", user("Go."))
	assert.Equal(t, "Done.", answer)
	req := api.Request(t, 1)
	for _, c := range calls {
		out, isError := functionResponse(t, req, c.ID)
		c.AssertOutput(t, out)
		assert.Equal(t, c.Failed, isError, c.ID)
	}
	// One user content answers them all, in the calls' order, each with
	// the call's name and ID (none for the call that had none).
	all := agenttest.Objects(t, req, "contents")
	require.Len(t, all, 3)
	answers := agenttest.Objects(t, all[2], "parts")
	require.Len(t, answers, len(fcs))
	for i, want := range fcs {
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
	ad, _ := agenttest.Adapter(t, montygenai.New)
	api, client := newFakeAPI(t)
	var paused string
	api.Reply(functionCalls("resp_1", [3]string{"call_run", agent.ToolName, agenttest.PauseArgs}))
	api.ReplyWith(func(req map[string]any) string {
		// The model asks the user (a function of its own, answered here)
		// and resumes the run with the answer.
		paused, _, _ = findFunctionResponse(req, "call_run")
		args, ok := agenttest.ResumeArgs(paused)
		if !ok {
			return final("resp_2", "The run did not pause.")
		}
		return functionCalls("resp_2", [3]string{"call_resume", agent.ResumeToolName, args})
	})
	api.Reply(final("resp_3", "PARIS it is."))

	answer, _ := loop(t, client, ad, "conv-pause", user("Shout my city."))
	assert.Equal(t, "PARIS it is.", answer)
	require.Equal(t, 3, api.Count())
	out, isError := functionResponse(t, api.Request(t, 1), "call_run")
	assert.False(t, isError, "a paused run did not fail")
	assert.Contains(t, out, "ask_user")
	assert.Equal(t, paused, out)
	out, isError = functionResponse(t, api.Request(t, 2), "call_resume")
	assert.False(t, isError)
	assert.Equal(t, agenttest.WantResumed, out)
}

// Another conversation cannot resume a conversation's paused run.
func TestResumeFromAnotherConversation(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	ctx := context.Background()
	resp, err := ad.Call(ctx, "conv-pause", agent.ToolName,
		map[string]any{"code": "ask_user('Which city?')", "client_tools": []any{map[string]any{"name": "ask_user"}}})
	require.NoError(t, err)
	out, ok := resp["output"].(string)
	require.True(t, ok, "%v", resp)
	runID := agenttest.RunID(out)
	require.NotEmpty(t, runID, out)
	resp, err = ad.Call(ctx, "conv-other", agent.ResumeToolName, map[string]any{"run_id": runID, "results": []any{}})
	require.NoError(t, err)
	assert.NotContains(t, resp, "output")
	assert.Contains(t, resp["error"], "is not paused")
}

// Arguments that cannot be JSON, or none, go back to the model too.
func TestCallArguments(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
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
	ad, exec := agenttest.Adapter(t, montygenai.New)
	var resp genai.GenerateContentResponse
	require.NoError(t, json.Unmarshal([]byte(functionCalls("resp_1", [3]string{"call_1", agent.ToolName, agenttest.Args("1 + 1")})), &resp))

	out, err := ad.Handle(context.Background(), "ok", &resp)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, &genai.FunctionResponse{ID: "call_1", Name: agent.ToolName, Response: map[string]any{"output": "2"}}, out[0].FunctionResponse)
	for _, empty := range []*genai.GenerateContentResponse{nil, {}, {Candidates: []*genai.Candidate{nil}}, {Candidates: []*genai.Candidate{{}}}} {
		none, err := ad.Handle(context.Background(), "ok", empty)
		require.NoError(t, err)
		assert.Empty(t, none)
	}

	// A bad conversation key, a context that ended, a closed keeper: no
	// parts or response come with the error.
	agenttest.CallerErrors(t, exec, "montygenai", func(ctx context.Context, conversation string) (any, error) {
		return ad.Handle(ctx, conversation, &resp)
	}, func(ctx context.Context, conversation string) (any, error) {
		return ad.Call(ctx, conversation, agent.ToolName, agenttest.Input("1"))
	})
}

// Conversations run in parallel, each in its own session, each with its
// own loop through the SDK.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montygenai.New)
	type conv struct {
		api    *agenttest.API
		client *genai.Client
		answer string
	}
	runs := make([]*conv, 4)
	for i := range runs {
		api, client := newFakeAPI(t)
		api.Reply(
			functionCalls("resp_set", [3]string{"call_set", agent.ToolName, agenttest.Args(agenttest.SetV(i))}),
			functionCalls("resp_get", [3]string{"call_get", agent.ToolName, agenttest.Args(agenttest.GetV)}),
			final("resp_end", "Done."),
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
		out, isError := functionResponse(t, r.api.Request(t, 2), "call_get")
		assert.Equal(t, agenttest.WantV(i), out, "par-%d", i)
		assert.False(t, isError)
	}
}
