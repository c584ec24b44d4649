package montygenkit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/firebase/genkit/go/ai"

	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/tools"
)

// NoOutput is the tool output of a call that printed nothing and whose
// last value is None (the executor's text is then empty).
const NoOutput = agent.NoOutput

// Adapter offers an executor's tools to Genkit and answers the model's
// calls of them. Make one with New; it is safe for concurrent use.
type Adapter struct {
	base agent.Adapter
}

// New returns an adapter for exec.
func New(exec *agent.Executor) *Adapter {
	return &Adapter{base: agent.Adapter{Exec: exec, Name: "montygenkit"}}
}

// Tools returns the executor's tools (execute_python, resume_python) as
// Genkit tools bound to conversation, for ai.WithTools in genkit.Generate,
// ai.Generate or a prompt's execution. Each is an ai.Tool made with
// ai.NewTool: it is not registered, and Genkit registers it for the
// Generate call it is given to. (Do not also define tools of these names
// with genkit.DefineTool: Genkit would run those instead.)
//
// Genkit's tool functions carry no conversation, so the tools are made
// for one: conversation is the executor's thread key (see
// agent.SessionID), and every call of these tools runs in that
// conversation's Python session. Make the tools per Generate call, or
// keep one set per conversation key.
//
// Each tool's definition is the executor's as it is when Tools is
// called: its description briefs the model on the host functions
// registered then, and its input schema is the tool's JSON schema. A
// call fails with a Go error when conversation is not a valid thread
// key, which ends the generate loop.
func (a *Adapter) Tools(conversation string) []ai.ToolRef {
	var out []ai.ToolRef
	for _, def := range a.base.Tools() {
		out = append(out, a.tool(conversation, def))
	}
	return out
}

// tool makes the Genkit tool for def, bound to conversation.
func (a *Adapter) tool(conversation string, def tools.Tool) ai.Tool {
	name := def.Name
	return ai.NewTool(name, def.Description,
		func(tc *ai.ToolContext, input any) (string, error) {
			arguments, err := json.Marshal(input)
			if err != nil {
				return fmt.Sprintf("The arguments are not JSON: %v", err), nil
			}
			return a.Call(tc, conversation, name, string(arguments))
		},
		ai.WithInputSchema(a.base.Schema(def)))
}

// Call runs one call of the tool named name with JSON arguments in the
// conversation's session and returns the tool's output for the model: the
// executor's text (print output and host call results, then the repr of
// the final value, or the traceback; see agent.Result.Text), NoOutput
// when that is empty, or, for a call that could not run, why (arguments
// the tool does not take, an unknown tool name, a store failure). It is
// what the tools from Tools run, for code that answers tool requests of
// its own.
//
// conversation is the executor's thread key (see agent.SessionID): 1 to
// 200 letters, digits and . _ - :, no "/". Its session is made at its
// first call.
//
// The error is non-nil only when the loop cannot go on: ctx ended (the
// error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or conversation is not a valid thread key (it
// matches agent.ErrBadArgs). Genkit ends its generate loop with it.
func (a *Adapter) Call(ctx context.Context, conversation, name, arguments string) (string, error) {
	text, _, err := a.base.Answer(ctx, conversation, name, json.RawMessage(arguments))
	return text, err
}
