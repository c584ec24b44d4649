package montyopenai

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/monty-go/monty/session/agent"
)

// NoOutput is the tool output of a call that printed nothing and whose
// last value is None (the executor's text is then empty).
const NoOutput = agent.NoOutput

// Adapter offers an executor's tools to the OpenAI SDK and answers the
// model's calls of them. Make one with New; it is safe for concurrent use.
type Adapter struct {
	base agent.Adapter
}

// New returns an adapter for exec.
func New(exec *agent.Executor) *Adapter {
	return &Adapter{base: agent.Adapter{Exec: exec, Name: "montyopenai"}}
}

// ChatTools returns the executor's tools (execute_python, resume_python)
// as Chat Completions function tools, for ChatCompletionNewParams.Tools.
// The descriptions brief the model on the host functions registered now,
// so take them anew when the registry changes.
func (a *Adapter) ChatTools() []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, t := range a.base.Tools() {
		out = append(out, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  a.base.Schema(t),
		}))
	}
	return out
}

// ResponseTools returns the executor's tools (execute_python,
// resume_python) as Responses API function tools, for
// responses.ResponseNewParams.Tools. They are not strict: their schemas
// have optional parameters. As with ChatTools, take them anew when the
// registry changes.
func (a *Adapter) ResponseTools() []responses.ToolUnionParam {
	var out []responses.ToolUnionParam
	for _, t := range a.base.Tools() {
		tool := responses.ToolParamOfFunction(t.Name, a.base.Schema(t), false)
		tool.OfFunction.Description = openai.String(t.Description)
		out = append(out, tool)
	}
	return out
}

// HandleChat runs the function tool calls of an assistant message (its
// ToolCalls, in order) in the conversation's session and returns a tool
// message answering each, with its tool_call_id, to append to the
// messages after the assistant message itself (msg.ToParam()). A message
// without tool calls gets none. Custom tool calls are left alone: the
// adapter offers none.
//
// Every function call is answered, also one naming a tool the adapter
// does not know; a loop that offers tools of its own answers those itself
// and passes the others to Call. The error, nil unless the loop must stop,
// is as Call's; no messages come with it.
func (a *Adapter) HandleChat(ctx context.Context, conversation string, msg openai.ChatCompletionMessage) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []openai.ChatCompletionMessageParamUnion
	for _, tc := range msg.ToolCalls {
		if tc.Type == "custom" {
			continue
		}
		text, err := a.Call(ctx, conversation, tc.Function.Name, tc.Function.Arguments)
		if err != nil {
			return nil, err
		}
		out = append(out, openai.ToolMessage(text, tc.ID))
	}
	return out, nil
}

// HandleResponse runs the function calls among a response's output items
// (type function_call, in order) in the conversation's session and returns
// a function_call_output input item answering each, with its call_id, for
// the next request's input: with PreviousResponseID set to resp.ID, or
// after the response's output items when the caller keeps the history
// itself. A response without function calls gets none.
//
// As with HandleChat, every function call is answered, and the error,
// nil unless the loop must stop, is as Call's; no items come with it.
func (a *Adapter) HandleResponse(ctx context.Context, conversation string, resp *responses.Response) ([]responses.ResponseInputItemUnionParam, error) {
	var out []responses.ResponseInputItemUnionParam
	for _, item := range resp.Output {
		if item.Type != "function_call" {
			continue
		}
		fc := item.AsFunctionCall()
		text, err := a.Call(ctx, conversation, fc.Name, fc.Arguments)
		if err != nil {
			return nil, err
		}
		answer := responses.ResponseInputItemParamOfFunctionCallOutput(text)
		answer.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
		out = append(out, answer)
	}
	return out, nil
}

// Call runs one call of the tool named name with JSON arguments in the
// conversation's session and returns the tool's output for the model: the
// executor's text (print output and host call results, then the repr of
// the final value, or the traceback; see agent.Result.Text), NoOutput
// when that is empty, or, for a call that could not run, why (arguments
// the tool does not take, an unknown tool name, a store failure).
//
// conversation is the executor's thread key (see agent.SessionID): 1 to
// 200 letters, digits and . _ - :, no "/". Its session is made at its
// first call.
//
// The error is non-nil only when the loop cannot go on: ctx ended (the
// error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or conversation is not a valid thread key.
func (a *Adapter) Call(ctx context.Context, conversation, name, arguments string) (string, error) {
	text, _, err := a.base.Answer(ctx, conversation, name, json.RawMessage(arguments))
	return text, err
}
