package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/monty-go/monty/session"
)

// NoOutput is what a model is told of a call that printed nothing and
// whose last value is None (Result.Text is then empty).
const NoOutput = "(no output)"

// Answer runs one call a model made of the executor's tools, the way the
// adapters to agent SDKs and frameworks (session/agent/adapters) answer
// it: name is ToolName or ResumeToolName, args its JSON arguments,
// threadKey the caller's key of the conversation (see SessionID).
//
// text is what goes back to the model: the result's Text (print output
// and host call results, then the repr of the final value, or the
// traceback), NoOutput when that is empty, or why the call could not run
// (arguments the tool does not take, a tool name it does not know, a store
// failure). failed says the call failed: the code raised, hit a limit or
// failed its type check, or the call could not run; a run paused at
// client tools did not fail.
//
// The error is non-nil only when the caller's loop cannot go on: ctx ended
// (the error matches its cause), the executor's keeper is closed (it matches
// session.ErrClosed), or threadKey is not a valid thread key (it matches
// ErrBadArgs). Safe for concurrent use, as the executor is.
func (e *Executor) Answer(ctx context.Context, threadKey, name string, args json.RawMessage) (text string, failed bool, err error) {
	if _, err := SessionID(threadKey, ""); err != nil {
		return "", false, fmt.Errorf("agent: conversation key: %w", err)
	}
	var res *Result
	switch name {
	case ToolName:
		res, err = e.Execute(ctx, threadKey, args)
	case ResumeToolName:
		res, err = e.Resume(ctx, threadKey, args)
	default:
		return fmt.Sprintf("Unknown tool %q: the tools here are %s and %s.", name, ToolName, ResumeToolName), true, nil
	}
	switch {
	case err == nil:
		if res.Text == "" {
			return NoOutput, res.Err != nil, nil
		}
		return res.Text, res.Err != nil, nil
	case ctx.Err() != nil:
		if cause := context.Cause(ctx); !errors.Is(err, cause) {
			return "", false, fmt.Errorf("agent: %s: %w (%w)", name, err, cause)
		}
		return "", false, fmt.Errorf("agent: %s: %w", name, err)
	case errors.Is(err, session.ErrClosed):
		return "", false, fmt.Errorf("agent: %s: %w", name, err)
	case errors.Is(err, ErrBadArgs):
		return err.Error(), true, nil
	default:
		return "The call could not run: " + err.Error(), true, nil
	}
}
