package montyanthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/tools"
)

// NoOutput is the tool result of a call that printed nothing and whose
// last value is None (the executor's text is then empty).
const NoOutput = agent.NoOutput

// Adapter offers an executor's tools to the Anthropic SDK and answers the
// model's calls of them. Make one with New; it is safe for concurrent use.
type Adapter struct {
	base agent.Adapter
}

// New returns an adapter for exec.
func New(exec *agent.Executor) *Adapter {
	return &Adapter{base: agent.Adapter{Exec: exec, Name: "montyanthropic"}}
}

// schema turns a tool's JSON schema into the SDK's input schema: its
// properties and required list, and its other keywords as extra fields.
func schema(t tools.Tool) anthropic.ToolInputSchemaParam {
	var (
		known struct {
			Properties any      `json:"properties"`
			Required   []string `json:"required"`
		}
		all map[string]any
	)
	if err := errors.Join(json.Unmarshal(t.Parameters, &known), json.Unmarshal(t.Parameters, &all)); err != nil {
		// The executor writes these schemas; they are always objects.
		panic(fmt.Sprintf("montyanthropic: %s: parameters are not a JSON object schema: %v", t.Name, err))
	}
	s := anthropic.ToolInputSchemaParam{Properties: known.Properties, Required: known.Required}
	for k, v := range all {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s
}

// Tools returns the executor's tools (execute_python, resume_python) as
// Messages API custom tools, for MessageNewParams.Tools. The descriptions
// brief the model on the host functions registered now, so take them anew
// when the registry changes.
func (a *Adapter) Tools() []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	for _, t := range a.base.Tools() {
		tool := anthropic.ToolUnionParamOfTool(schema(t), t.Name)
		tool.OfTool.Description = anthropic.String(t.Description)
		out = append(out, tool)
	}
	return out
}

// Handle runs the tool_use blocks of an assistant message (its Content,
// in order) in the conversation's session and returns a tool_result block
// answering each, with its tool_use_id and is_error set where the call
// failed. They are the content of the next user message
// (anthropic.NewUserMessage(blocks...)), sent after the assistant message
// itself (msg.ToParam()); the API wants tool results before any text in
// that message. A message without tool_use blocks (or a nil one) gets
// none. Server tool use blocks are left alone: the API runs those.
//
// Every tool_use block is answered, also one naming a tool the adapter
// does not know; a loop that offers tools of its own answers those itself
// and passes the others to Call. The error, nil unless the loop must stop,
// is as Call's; no blocks come with it.
func (a *Adapter) Handle(ctx context.Context, conversation string, msg *anthropic.Message) ([]anthropic.ContentBlockParamUnion, error) {
	if msg == nil {
		return nil, nil
	}
	var out []anthropic.ContentBlockParamUnion
	for _, block := range msg.Content {
		if block.Type != "tool_use" {
			continue
		}
		use := block.AsToolUse()
		text, isError, err := a.Call(ctx, conversation, use.Name, use.Input)
		if err != nil {
			return nil, err
		}
		out = append(out, anthropic.NewToolResultBlock(use.ID, text, isError))
	}
	return out, nil
}

// Call runs one call of the tool named name with JSON input in the
// conversation's session and returns the tool result for the model: the
// executor's text (print output and host call results, then the repr of
// the final value, or the traceback; see agent.Result.Text), NoOutput
// when that is empty, or, for a call that could not run, why (input the
// tool does not take, an unknown tool name, a store failure). isError
// is true when the call failed (the code raised, hit a limit or failed
// its type check, or the call could not run): the tool_result's is_error.
// A run paused at client tools did not fail.
//
// conversation is the executor's thread key (see agent.SessionID): 1 to
// 200 letters, digits and . _ - :, no "/". Its session is made at its
// first call.
//
// The error is non-nil only when the loop cannot go on: ctx ended (the
// error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or conversation is not a valid thread key.
func (a *Adapter) Call(ctx context.Context, conversation, name string, input json.RawMessage) (text string, isError bool, err error) {
	return a.base.Answer(ctx, conversation, name, input)
}
