package montyopenai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/agent"
	montyopenai "github.com/monty-go/monty/session/agent/adapters/openai"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// newFakeAPI starts a local OpenAI API serving path, the endpoint the SDK
// must call, which answers each request with the next of its replies
// (JSON in the shape the API returns) and keeps the request bodies for
// the test to check, and returns a client of it.
func newFakeAPI(t *testing.T, path string) (*agenttest.API, openai.Client) {
	api := agenttest.NewAPI(t, agenttest.APIOptions{
		Accept: func(r *http.Request) (int, string) {
			if r.Method != http.MethodPost || r.URL.Path != path || r.Header.Get("Authorization") != "Bearer test" {
				return http.StatusNotFound, "unexpected request " + r.Method + " " + r.URL.Path
			}
			return 0, ""
		},
		Fail: func(w http.ResponseWriter, status int, message string) {
			kind := "invalid_request_error"
			if status == http.StatusInternalServerError {
				kind = "server_error"
			}
			http.Error(w, `{"error":{"message":"`+message+`","type":"`+kind+`"}}`, status)
		},
		Header: http.Header{"Content-Type": {"application/json"}},
	})
	client := openai.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return api, client
}

// args is execute_python's arguments for code, as the model writes them
// in a tool call (a JSON string holding a JSON object).
func args(code string) string {
	return agenttest.JSONString(agenttest.Args(code))
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
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + agenttest.JSONString(text) + `,"refusal":null,"annotations":[]},` +
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

// toolMessage finds the tool message answering callID in a request.
func toolMessage(t *testing.T, req map[string]any, callID string) string {
	t.Helper()
	for _, m := range agenttest.Objects(t, req, "messages") {
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
	ad, exec := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/chat/completions")
	api.Reply(chatFinal("chatcmpl-0", "Hello."))
	answer, _ := chatLoop(t, client, ad, "c0", user("hi"))
	assert.Equal(t, "Hello.", answer)

	var fns []map[string]any
	for _, tool := range agenttest.Objects(t, api.Request(t, 0), "tools") {
		assert.Equal(t, "function", tool["type"])
		fn, _ := tool["function"].(map[string]any)
		fns = append(fns, fn)
	}
	agenttest.AssertToolObjects(t, exec.Tools(), fns, "parameters")
	// The description briefs the model on the registered function.
	assert.Contains(t, fns[0]["description"], agenttest.FuncName)
}

func TestChatGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/chat/completions")
	api.Reply(
		chatToolCalls("chatcmpl-1", [3]string{"call_go", agent.ToolName, args(agenttest.CallDouble)}),
		chatFinal("chatcmpl-2", "Double 21 is 42."),
	)
	answer, _ := chatLoop(t, client, ad, "conv-go", user("What is double 21?"))
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.Count())
	agenttest.AssertDoubled(t, toolMessage(t, api.Request(t, 1), "call_go"))
	// The assistant message with its tool call goes back before the answer.
	msgs := agenttest.Objects(t, api.Request(t, 1), "messages")
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1]["role"])
	assert.Equal(t, "call_go", msgs[1]["tool_calls"].([]any)[0].(map[string]any)["id"])
}

func TestChatStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/chat/completions")

	// Turn 1 of conversation A sets a variable.
	api.Reply(
		chatToolCalls("chatcmpl-1", [3]string{"call_set", agent.ToolName, args(agenttest.SetSecret)}),
		chatFinal("chatcmpl-2", "Stored."),
	)
	answer, history := chatLoop(t, client, ad, "conv-a", user("Remember a number."))
	assert.Equal(t, "Stored.", answer)
	assert.Contains(t, toolMessage(t, api.Request(t, 1), "call_set"), "set")

	// Turn 2 of conversation A reads it.
	api.Reply(
		chatToolCalls("chatcmpl-3", [3]string{"call_get", agent.ToolName, args(agenttest.GetSecret)}),
		chatFinal("chatcmpl-4", "It is 420."),
	)
	history = append(history, openai.UserMessage("What is ten times it?"))
	answer, _ = chatLoop(t, client, ad, "conv-a", history)
	assert.Equal(t, "It is 420.", answer)
	assert.Equal(t, agenttest.WantSecret, toolMessage(t, api.Request(t, 3), "call_get"))

	// Conversation B has its own session: the variable is not there, and
	// the NameError goes back to the model, which answers.
	api.Reply(
		chatToolCalls("chatcmpl-5", [3]string{"call_other", agent.ToolName, args(agenttest.ReadSecret)}),
		chatFinal("chatcmpl-6", "There is no number here."),
	)
	answer, _ = chatLoop(t, client, ad, "conv-b", user("What number did I give you?"))
	assert.Equal(t, "There is no number here.", answer)
	agenttest.AssertNameError(t, toolMessage(t, api.Request(t, 5), "call_other"))
}

func TestChatExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/chat/completions")
	api.Reply(
		chatToolCalls("chatcmpl-1", [3]string{"call_div", agent.ToolName, args(agenttest.DivideByZero)}),
		chatToolCalls("chatcmpl-2", [3]string{"call_fix", agent.ToolName, args("total / 4")}),
		chatFinal("chatcmpl-3", "It is 2.5."),
	)
	answer, _ := chatLoop(t, client, ad, "conv-err", user("Divide."))
	assert.Equal(t, "It is 2.5.", answer)
	require.Equal(t, 3, api.Count())
	agenttest.AssertTraceback(t, toolMessage(t, api.Request(t, 1), "call_div"), "ZeroDivisionError")
	// A failed call leaves the session as it was: total is not defined.
	assert.Contains(t, toolMessage(t, api.Request(t, 2), "call_fix"), "NameError")
}

func TestChatSeveralCallsBadArgsAndUnknownTool(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/chat/completions")
	calls := agenttest.SeveralCalls()
	var tcs [][3]string
	for _, c := range calls {
		// The arguments are a JSON string holding the JSON object.
		tcs = append(tcs, [3]string{c.ID, c.Name, agenttest.JSONString(c.Args)})
	}
	api.Reply(chatToolCalls("chatcmpl-1", tcs...), chatFinal("chatcmpl-2", "Done."))
	answer, _ := chatLoop(t, client, ad, "conv-many", user("Go."))
	assert.Equal(t, "Done.", answer)
	req := api.Request(t, 1)
	for _, c := range calls {
		c.AssertOutput(t, toolMessage(t, req, c.ID))
	}
	// The answers follow the calls' order.
	msgs := agenttest.Objects(t, req, "messages")
	require.Len(t, msgs, 2+len(calls))
	for i, c := range calls {
		assert.Equal(t, c.ID, msgs[2+i]["tool_call_id"])
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
		`"content":[{"type":"output_text","text":`+agenttest.JSONString(text)+`,"annotations":[],"logprobs":[]}]}`)
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
	ad, exec := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/responses")
	api.Reply(respFinal("resp_0", "Hello."))
	answer, _ := responsesLoop(t, client, ad, "r0", "", "hi")
	assert.Equal(t, "Hello.", answer)

	tools := agenttest.Objects(t, api.Request(t, 0), "tools")
	agenttest.AssertToolObjects(t, exec.Tools(), tools, "parameters")
	for _, tool := range tools {
		assert.Equal(t, "function", tool["type"])
		assert.Equal(t, false, tool["strict"])
	}
}

func TestResponsesGoFunction(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/responses")
	api.Reply(
		respFunctionCalls("resp_1", [3]string{"call_go", agent.ToolName, args(agenttest.CallDouble)}),
		respFinal("resp_2", "Double 21 is 42."),
	)
	answer, _ := responsesLoop(t, client, ad, "conv-go", "", "What is double 21?")
	assert.Equal(t, "Double 21 is 42.", answer)
	require.Equal(t, 2, api.Count())
	agenttest.AssertDoubled(t, functionOutput(t, api.Request(t, 1), "resp_1", "call_go"))
}

func TestResponsesStateAcrossTurnsAndConversationsApart(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/responses")

	api.Reply(
		respFunctionCalls("resp_1", [3]string{"call_set", agent.ToolName, args(agenttest.SetSecret)}),
		respFinal("resp_2", "Stored."),
	)
	answer, last := responsesLoop(t, client, ad, "conv-a", "", "Remember a number.")
	assert.Equal(t, "Stored.", answer)
	assert.Contains(t, functionOutput(t, api.Request(t, 1), "resp_1", "call_set"), "set")

	api.Reply(
		respFunctionCalls("resp_3", [3]string{"call_get", agent.ToolName, args(agenttest.GetSecret)}),
		respFinal("resp_4", "It is 420."),
	)
	answer, _ = responsesLoop(t, client, ad, "conv-a", last, "What is ten times it?")
	assert.Equal(t, "It is 420.", answer)
	assert.Equal(t, "resp_2", api.Request(t, 2)["previous_response_id"])
	assert.Equal(t, agenttest.WantSecret, functionOutput(t, api.Request(t, 3), "resp_3", "call_get"))

	api.Reply(
		respFunctionCalls("resp_5", [3]string{"call_other", agent.ToolName, args(agenttest.ReadSecret)}),
		respFinal("resp_6", "There is no number here."),
	)
	answer, _ = responsesLoop(t, client, ad, "conv-b", "", "What number did I give you?")
	assert.Equal(t, "There is no number here.", answer)
	agenttest.AssertNameError(t, functionOutput(t, api.Request(t, 5), "resp_5", "call_other"))
}

func TestResponsesExceptionGoesBackToTheModel(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	api, client := newFakeAPI(t, "/responses")
	api.Reply(
		respFunctionCalls("resp_1", [3]string{"call_raise", agent.ToolName, args(agenttest.Raise)}),
		respFunctionCalls("resp_2",
			[3]string{"call_a", agent.ToolName, args("x = 3")},
			[3]string{"call_b", agenttest.UnknownTool, agenttest.JSONString(`{}`)},
			[3]string{"call_c", agent.ToolName, args("x * double(x)")},
		),
		respFinal("resp_3", "Order 7 does not exist; 18."),
	)
	answer, _ := responsesLoop(t, client, ad, "conv-err", "", "Look up order 7.")
	assert.Equal(t, "Order 7 does not exist; 18.", answer)
	require.Equal(t, 3, api.Count())
	agenttest.AssertTraceback(t, functionOutput(t, api.Request(t, 1), "resp_1", "call_raise"), agenttest.WantRaise)
	req := api.Request(t, 2)
	assert.Equal(t, montyopenai.NoOutput, functionOutput(t, req, "resp_2", "call_a"))
	assert.Contains(t, functionOutput(t, req, "resp_2", "call_b"), agenttest.WantUnknownTool)
	assert.Contains(t, functionOutput(t, req, "resp_2", "call_c"), "\n18")
	input := req["input"].([]any)
	require.Len(t, input, 3)
	for i, id := range []string{"call_a", "call_b", "call_c"} {
		assert.Equal(t, id, input[i].(map[string]any)["call_id"])
	}
}

// --- Go errors: only what the caller must handle ---

func TestCallerErrors(t *testing.T) {
	ad, exec := agenttest.Adapter(t, montyopenai.New)
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

	// A bad conversation key, a context that ended, a closed keeper: no
	// messages or items come with the error.
	agenttest.CallerErrors(t, exec, "montyopenai", func(ctx context.Context, conversation string) (any, error) {
		return ad.HandleChat(ctx, conversation, msg)
	}, func(ctx context.Context, conversation string) (any, error) {
		return ad.HandleResponse(ctx, conversation, &resp)
	})
}

// Conversations run in parallel, each in its own session.
func TestConcurrentConversations(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	ctx := context.Background()
	agenttest.Parallel(t, 4, func(i int, conv string) error {
		if _, err := ad.Call(ctx, conv, agent.ToolName, agenttest.Args(agenttest.SetV(i))); err != nil {
			return err
		}
		out, err := ad.Call(ctx, conv, agent.ToolName, agenttest.Args(agenttest.GetV))
		if err == nil && out != agenttest.WantV(i) {
			err = fmt.Errorf("got %q", out)
		}
		return err
	})
}

// A run paused at a client tool goes on with resume_python, both answered
// through the adapter in the conversation's session.
func TestClientToolPauseAndResume(t *testing.T) {
	ad, _ := agenttest.Adapter(t, montyopenai.New)
	ctx := context.Background()
	out, err := ad.Call(ctx, "conv-pause", agent.ToolName, agenttest.PauseArgs)
	require.NoError(t, err)
	res, ok := agenttest.ResumeArgs(out)
	require.True(t, ok, out)

	// Another conversation cannot resume it.
	out, err = ad.Call(ctx, "conv-other", agent.ResumeToolName, res)
	require.NoError(t, err)
	assert.Contains(t, out, "is not paused")

	out, err = ad.Call(ctx, "conv-pause", agent.ResumeToolName, res)
	require.NoError(t, err)
	assert.Equal(t, agenttest.WantResumed, out)
}
