package montygenai

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/monty-go/monty/session/agent"
)

// NoOutput is the output of a call that printed nothing and whose last
// value is None (the executor's text is then empty).
const NoOutput = agent.NoOutput

// The keys of a function response (FunctionResponse.Response): the text
// of a call that succeeded (or paused at client tools) is under
// OutputKey, that of a call that failed under ErrorKey. A response has
// one of them.
const (
	OutputKey = "output"
	ErrorKey  = "error"
)

// Adapter offers an executor's tools to the Gen AI SDK and answers the
// model's calls of them. Make one with New; it is safe for concurrent use.
type Adapter struct {
	base agent.Adapter
}

// New returns an adapter for exec.
func New(exec *agent.Executor) *Adapter {
	return &Adapter{base: agent.Adapter{Exec: exec, Name: "montygenai"}}
}

// Tools returns the executor's tools (execute_python, resume_python) as
// one tool of function declarations, for GenerateContentConfig.Tools.
// Their parameters are JSON schemas (ParametersJsonSchema), given as the
// executor writes them. The descriptions brief the model on the host
// functions registered now, so take them anew when the registry changes.
func (a *Adapter) Tools() []*genai.Tool {
	var decls []*genai.FunctionDeclaration
	for _, t := range a.base.Tools() {
		decls = append(decls, &genai.FunctionDeclaration{
			Name:                 t.Name,
			Description:          t.Description,
			ParametersJsonSchema: a.base.Schema(t),
		})
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}
}

// Handle runs the function calls of a response's first candidate (its
// content's function call parts, in order) in the conversation's session
// and returns a function response part answering each, with the call's
// ID and name. They are the parts of the next user content
// (genai.NewContentFromParts(parts, genai.RoleUser)), sent after the
// candidate's content itself; with a genai.Chat, send them with
// chat.Send(ctx, parts...). A response without function calls (or a nil
// one, or one without candidates) gets none. Loops that pick another
// candidate pass its calls to Call.
//
// Every function call is answered, also one naming a function the
// adapter does not know; a loop that declares functions of its own
// answers those itself and passes the others to Call. The error, nil
// unless the loop must stop, is as Call's; no parts come with it.
func (a *Adapter) Handle(ctx context.Context, conversation string, resp *genai.GenerateContentResponse) ([]*genai.Part, error) {
	if resp == nil || len(resp.Candidates) == 0 || resp.Candidates[0] == nil || resp.Candidates[0].Content == nil {
		return nil, nil
	}
	var out []*genai.Part
	for _, part := range resp.Candidates[0].Content.Parts {
		if part == nil || part.FunctionCall == nil {
			continue
		}
		fc := part.FunctionCall
		response, err := a.Call(ctx, conversation, fc.Name, fc.Args)
		if err != nil {
			return nil, err
		}
		out = append(out, &genai.Part{FunctionResponse: &genai.FunctionResponse{
			ID:       fc.ID,
			Name:     fc.Name,
			Response: response,
		}})
	}
	return out, nil
}

// Call runs one call of the function named name with arguments args in
// the conversation's session and returns the function's response for the
// model (FunctionResponse.Response). Under OutputKey is the executor's
// text (print output and host call results, then the repr of the final
// value; see agent.Result.Text), or NoOutput when that is empty; a run
// paused at client tools did not fail, and its text is output too. Under
// ErrorKey, for a call that failed, is the traceback or the limit hit
// (the executor's text), or, for a call that could not run, why
// (arguments the tool does not take, an unknown function name, a store
// failure).
//
// conversation is the executor's thread key (see agent.SessionID): 1 to
// 200 letters, digits and . _ - :, no "/". Its session is made at its
// first call.
//
// The error is non-nil only when the loop cannot go on: ctx ended (the
// error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or conversation is not a valid thread key.
func (a *Adapter) Call(ctx context.Context, conversation, name string, args map[string]any) (map[string]any, error) {
	if err := a.base.CheckConversation(conversation); err != nil {
		return nil, err
	}
	failed := func(text string) map[string]any { return map[string]any{ErrorKey: text} }
	if name != agent.ToolName && name != agent.ResumeToolName {
		// Gemini's word is function, where Executor.Answer says tool.
		return failed(fmt.Sprintf("Unknown function %q: the functions here are %s and %s.", name, agent.ToolName, agent.ResumeToolName)), nil
	}
	input, err := json.Marshal(args)
	if err != nil {
		return failed(fmt.Sprintf("The arguments of %s are not JSON: %v", name, err)), nil
	}
	text, isError, err := a.base.Answer(ctx, conversation, name, input)
	switch {
	case err != nil:
		return nil, err
	case isError:
		return failed(text), nil
	}
	return map[string]any{OutputKey: text}, nil
}
