package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
)

// TypeCheck configures type checking of a session's code before it runs.
// A checked call whose code has problems returns a *typecheck.Error
// (errors.Is(err, typecheck.ErrTypeErrors)) with the diagnostics; nothing
// runs and the state is unchanged.
//
// Code is checked against the session's own earlier calls: once a session
// has been checked, it records every call whose state it saves (in the
// stored state, so this holds in another process too), and the next check
// sees their functions, classes, variables and imports. Globals that
// existed before the first check are declared with type Any.
type TypeCheck struct {
	// Checker checks the code; nil means typecheck.Default.
	Checker *typecheck.Checker
	// Stubs is stub text for the names the host provides, such as
	// tools.Registry.Stubs, plus any of the caller's own.
	Stubs string
	// Modules are host modules the code may import.
	Modules []typecheck.ModuleStub
	// Format renders the diagnostics in Error.Result.Text (default
	// typecheck.Full).
	Format typecheck.Format
}

// ExecOptions are the per-call options of Session.ExecOptions.
type ExecOptions struct {
	// Inputs are bound as globals before the code runs (they stay in the
	// session like any other global); with TypeCheck, the code is checked
	// with them declared.
	Inputs []runtime.Input
	// TypeCheck checks the code before it runs; nil checks nothing (the
	// session's Options.TypeCheck applies to Exec and ExecWith only).
	TypeCheck *TypeCheck
	// Tools are functions the code may call that the caller answers: a
	// call stops the run, which is stored paused (Result.Paused) until
	// Resume answers it, in this process or another (see ClientTool).
	Tools []ClientTool
	// RunTTL is how long a paused run waits for Resume; 0 means
	// DefaultRunTTL.
	RunTTL time.Duration
	// Idempotency, when set, makes the call safe to retry: its key is
	// stored with the state it leaves, and a call with the same key
	// replays its answer (Result.Replay) instead of running; see
	// Idempotency.
	Idempotency *Idempotency
}

// request is the check of code under limits, with inputs declared and
// tools as functions the checker knows only by name.
func (tc *TypeCheck) request(code string, inputs []runtime.Input, tools []ClientTool, limits runtime.Limits) typecheck.Request {
	req := typecheck.Request{Code: code, Stubs: tc.Stubs, Modules: tc.Modules, Format: tc.Format, Limits: limits}
	if len(inputs) > 0 {
		values := make(map[string]object.Value, len(inputs))
		for _, in := range inputs {
			values[in.Name] = in.Value
		}
		req.Stubs = req.Stubs + "\n" + typecheck.Declarations(values)
	}
	for _, t := range tools {
		// The client answers them with anything: the checker knows only
		// that they exist (and which ones are awaited).
		def := "def"
		if t.Async {
			def = "async def"
		}
		req.Stubs += fmt.Sprintf("\nfrom typing import Any\n%s %s(*args: Any, **kwargs: Any) -> Any: ...\n", def, t.Name)
	}
	return req
}

// seedContext starts recording: the globals of saved (nil: none), made by
// calls nobody recorded, are declared Any so that code using them is not
// reported as using undefined names.
func seedContext(saved *blob) *typecheck.Context {
	c := &typecheck.Context{}
	if saved == nil || len(saved.Names) == 0 {
		return c
	}
	var b strings.Builder
	b.WriteString("from typing import Any\n")
	for _, n := range saved.Names {
		b.WriteString(n + ": Any = ...\n")
	}
	c.Code = b.String()
	return c
}

// nextContext is the context to store with the state a call saves: tc
// with code committed, or nil when the session does not record (tc nil).
func nextContext(tc *typecheck.Context, code string) *typecheck.Context {
	if tc == nil {
		return nil
	}
	next := *tc
	next.Commit(code)
	return &next
}
