package montyeino

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/tools"
)

// NoOutput is the tool output of a call that printed nothing and whose
// last value is None (the executor's text is then empty).
const NoOutput = agent.NoOutput

// Adapter offers an executor's tools to Eino as invokable tools and
// answers the model's calls of them. Make one with New; it is safe for
// concurrent use.
type Adapter struct {
	base agent.Adapter
}

// New returns an adapter for exec.
func New(exec *agent.Executor) *Adapter {
	return &Adapter{base: agent.Adapter{Exec: exec, Name: "montyeino"}}
}

// Tools returns the executor's tools (execute_python, resume_python) as
// Eino invokable tools (each a tool.InvokableTool) bound to conversation,
// for compose.ToolsNodeConfig.Tools, a ReAct agent's ToolsConfig, or
// anything else that takes Eino tools.
//
// Eino's InvokableRun carries no conversation, so the tools are made for
// one: conversation is the executor's thread key (see agent.SessionID),
// and every call of these tools runs in that conversation's Python
// session. Make the tools (and the agent or graph that holds them) per
// conversation, or keep one set per conversation key.
//
// Info describes a tool as the executor does now: its description briefs
// the model on the host functions registered at the time of the call, and
// its parameters are the tool's JSON schema. Info and InvokableRun fail
// with a Go error when conversation is not a valid thread key, so a
// graph made with a bad key fails when it is built. InvokableRun takes
// no tool options; it ignores those it is given.
//
// Eino's tools node runs the calls of one assistant message in parallel
// unless told otherwise; calls for one conversation take their turns in
// the session, in an order of their own. Set
// compose.ToolsNodeConfig.ExecuteSequentially when a message's calls
// build on each other, so that they run in the model's order.
func (a *Adapter) Tools(conversation string) []tool.BaseTool {
	return []tool.BaseTool{
		&pythonTool{a: a, conversation: conversation, name: agent.ToolName},
		&pythonTool{a: a, conversation: conversation, name: agent.ResumeToolName},
	}
}

// Call runs one call of the tool named name with JSON arguments in the
// conversation's session and returns the tool's output for the model: the
// executor's text (print output and host call results, then the repr of
// the final value, or the traceback; see agent.Result.Text), NoOutput
// when that is empty, or, for a call that could not run, why (arguments
// the tool does not take, an unknown tool name, a store failure). It is
// what the tools from Tools run, for loops that dispatch tools of their
// own (compose.ToolsNodeConfig.UnknownToolsHandler, say).
//
// conversation is the executor's thread key (see agent.SessionID): 1 to
// 200 letters, digits and . _ - :, no "/". Its session is made at its
// first call.
//
// The error is non-nil only when the loop cannot go on: ctx ended (the
// error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or conversation is not a valid thread key (it
// matches agent.ErrBadArgs). Eino ends its graph run with it.
func (a *Adapter) Call(ctx context.Context, conversation, name, arguments string) (string, error) {
	text, _, err := a.base.Answer(ctx, conversation, name, json.RawMessage(arguments))
	return text, err
}

// pythonTool is one of the executor's tools, bound to a conversation.
type pythonTool struct {
	a            *Adapter
	conversation string
	name         string
}

var _ tool.InvokableTool = (*pythonTool)(nil)

// Info describes the tool: its name, description and JSON schema.
func (t *pythonTool) Info(context.Context) (*schema.ToolInfo, error) {
	if err := t.a.base.CheckConversation(t.conversation); err != nil {
		return nil, err
	}
	def := t.a.base.Definition(t.name)
	return &schema.ToolInfo{
		Name:        def.Name,
		Desc:        def.Description,
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(jsonSchema(def)),
	}, nil
}

// InvokableRun runs a call of the tool in the bound conversation's
// session; see Adapter.Call.
func (t *pythonTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	return t.a.Call(ctx, t.conversation, t.name, argumentsInJSON)
}

// jsonSchema decodes a tool's JSON schema for Eino. Eino's schema type
// writes an empty subschema ({}, any value) as true, which means the same.
func jsonSchema(t tools.Tool) *jsonschema.Schema {
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(t.Parameters, s); err != nil {
		// The executor writes these schemas; they are always objects.
		panic(fmt.Sprintf("montyeino: %s: parameters are not a JSON schema: %v", t.Name, err))
	}
	return s
}
