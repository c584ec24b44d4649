package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/monty-go/monty/session/tools"
)

// Adapter is the part of an adapter to an agent SDK or framework (the
// modules under session/agent/adapters) that no SDK changes: it answers
// one call of the executor's tools, with the errors the caller must
// handle named after the adapter's package; checks a conversation key;
// and gives the executor's tool definitions, all of them or one by name,
// with their JSON schemas decoded. Each adapter package keeps one in its
// own Adapter type, which turns the SDK's types into these calls and the
// answers back.
//
// Exec is required. An Adapter is a plain value, safe for concurrent use
// as its executor is.
type Adapter struct {
	// Exec is the executor that runs the calls. It stays its owner's to
	// close.
	Exec *Executor
	// Name is the adapter's package name (montyopenai, say), which begins
	// the text of each error and panic as "Name: ".
	Name string
}

// Answer runs one call of the tool named name with JSON arguments args in
// the conversation's session, as Executor.Answer does (conversation is
// its thread key), and wraps the error as "Name: …": the error still
// matches what Executor.Answer's matches (ctx's cause, session.ErrClosed,
// ErrBadArgs).
func (a Adapter) Answer(ctx context.Context, conversation, name string, args json.RawMessage) (text string, failed bool, err error) {
	text, failed, err = a.Exec.Answer(ctx, conversation, name, args)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", a.Name, err)
	}
	return text, failed, nil
}

// CheckConversation returns nil when conversation is a valid thread key
// (see SessionID), and otherwise an error "Name: conversation key: …"
// that matches ErrBadArgs: for adapters that check the key before a call
// runs, when a tool bound to it is described, say.
func (a Adapter) CheckConversation(conversation string) error {
	if _, err := SessionID(conversation, ""); err != nil {
		return fmt.Errorf("%s: conversation key: %w", a.Name, err)
	}
	return nil
}

// Tools returns the executor's tool definitions, execute_python then
// resume_python, as they are now (see Executor.Tools).
func (a Adapter) Tools() []tools.Tool { return a.Exec.Tools() }

// Definition returns the executor's definition of the tool named name, as
// it is now: Executor.Tool for ToolName, Executor.ResumeTool for
// ResumeToolName. Any other name panics: an adapter makes tools of these
// two only.
func (a Adapter) Definition(name string) tools.Tool {
	switch name {
	case ToolName:
		return a.Exec.Tool()
	case ResumeToolName:
		return a.Exec.ResumeTool()
	}
	panic(fmt.Sprintf("%s: no tool %q: the tools are %s and %s", a.Name, name, ToolName, ResumeToolName))
}

// Schema returns the parameters of t (its JSON schema) decoded as a JSON
// object, a new map at each call, for SDKs that take a schema as a map.
// It panics when they are not a JSON object, which the executor's tools
// always are.
func (a Adapter) Schema(t tools.Tool) map[string]any {
	var m map[string]any
	err := json.Unmarshal(t.Parameters, &m)
	if err == nil && m == nil {
		err = errors.New("null")
	}
	if err != nil {
		panic(fmt.Sprintf("%s: %s: parameters are not a JSON object: %v", a.Name, t.Name, err))
	}
	return m
}
