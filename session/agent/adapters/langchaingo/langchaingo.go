package montylangchaingo

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/tmc/langchaingo/tools"

	"github.com/monty-go/monty/session/agent"
)

// NoOutput is the tool output of a call that printed nothing and whose
// last value is None (the executor's text is then empty).
const NoOutput = agent.NoOutput

// Adapter offers an executor's tools to LangChainGo agents. Make one with
// New; it is safe for concurrent use.
type Adapter struct {
	base agent.Adapter
}

// New returns an adapter for exec.
func New(exec *agent.Executor) *Adapter {
	return &Adapter{base: agent.Adapter{Exec: exec, Name: "montylangchaingo"}}
}

// Tool returns the execute_python tool of the conversation: its input is
// the Python code, or the tool's arguments as a JSON object (see the
// package documentation), and it runs in the conversation's session. Its
// description briefs the model on the host functions registered when
// Description is called; LangChainGo's agents read it when they are made,
// so make the agent anew when the registry changes.
//
// conversation is the executor's thread key (see agent.SessionID): 1 to
// 200 letters, digits and . _ - :, no "/". It is checked at each call,
// whose error it is when not valid. Its session is made at its first call.
func (a *Adapter) Tool(conversation string) tools.Tool {
	return &tool{a: a, conversation: conversation, name: agent.ToolName}
}

// ResumeTool returns the resume_python tool of the conversation: its
// input is the tool's arguments as a JSON object, the results of the
// client tool calls an execute_python run of the conversation is paused
// at. conversation is as for Tool.
func (a *Adapter) ResumeTool(conversation string) tools.Tool {
	return &tool{a: a, conversation: conversation, name: agent.ResumeToolName}
}

// Tools returns the conversation's execute_python and resume_python
// tools, for an agent's tool list. An agent that offers no client tools
// needs only Tool.
func (a *Adapter) Tools(conversation string) []tools.Tool {
	return []tools.Tool{a.Tool(conversation), a.ResumeTool(conversation)}
}

// Call runs one call of the tool named name with input (as the tools
// take it) in the conversation's session and returns the tool's output
// for the model: the executor's text (print output and host call
// results, then the repr of the final value, or the traceback; see
// agent.Result.Text), NoOutput when that is empty, or, for a call that
// could not run, why (input the tool does not take, an unknown tool name,
// a store failure).
//
// The error is non-nil only when the agent loop cannot go on: ctx ended
// (the error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or conversation is not a valid thread key.
func (a *Adapter) Call(ctx context.Context, conversation, name, input string) (string, error) {
	args := json.RawMessage(strings.TrimSpace(input))
	if name == agent.ToolName {
		args = executeArgs(input)
	}
	text, _, err := a.base.Answer(ctx, conversation, name, args)
	return text, err
}

// executeArgs are execute_python's JSON arguments for an input: the input
// itself when it is a JSON object, else {"code": input}, the code taken
// out of a Markdown code fence that holds the whole input.
func executeArgs(input string) json.RawMessage {
	trimmed := strings.TrimSpace(input)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	code := unfence(trimmed)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"code": code}) // a string always encodes
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

// unfence returns the code in a Markdown code fence (```, an optional
// language name, a newline, the code, ```) that is the whole of s, or s
// when it is not one.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 || strings.ContainsAny(strings.TrimSpace(body[:nl]), " \t`") {
		return s
	}
	return strings.TrimSpace(body[nl+1:])
}

// tool is a LangChainGo tool: one of the executor's tools, bound to a
// conversation.
type tool struct {
	a            *Adapter
	conversation string
	name         string
}

var _ tools.Tool = (*tool)(nil)

// Name is the tool's name, execute_python or resume_python.
func (t *tool) Name() string { return t.name }

// Description is the executor's description of the tool, then how to
// write the input, with the JSON schema of the arguments.
func (t *tool) Description() string {
	def := t.a.base.Definition(t.name)
	if t.name == agent.ResumeToolName {
		return def.Description + "\n\nInput: a JSON object with these parameters (JSON schema): " + string(def.Parameters)
	}
	return def.Description + "\n\nInput: the Python code to run, as it is (not quoted); or, to set other " +
		"parameters, a JSON object with these parameters (JSON schema): " + string(def.Parameters) +
		". Input that is a JSON object is always read as parameters, so to run code that is itself a JSON object, send it as {\"code\": ...}."
}

// Call runs the tool with input in its conversation's session; see
// Adapter.Call.
func (t *tool) Call(ctx context.Context, input string) (string, error) {
	return t.a.Call(ctx, t.conversation, t.name, input)
}
