// Package agent is the tool surface for LLM agents: Go host functions
// with schemas that Python code can call, a protocol-neutral event stream
// per run, and the execute_python tool with an executor that keeps one
// persistent session per conversation.
//
// # Host functions
//
// A Function couples a Schema (name, description, parameters with types,
// defaults and descriptions, return description, category) with a Handler.
// Func adapts a plain Go function by reflection: an optional leading
// context.Context, then one Go parameter per schema parameter; Python
// arguments, positional or keyword, are bound to the parameters, checked
// and converted (a mismatch raises TypeError in Python, worded like
// CPython's), and the result is converted back. A Go error raises
// RuntimeError, or the Function's ErrorType, or the exact type of a
// *runtime.Exception; Python code catches it with try/except. Async
// functions run in their own goroutines and asyncio.gather runs several
// concurrently.
//
// A Registry holds functions; its Host offers them to a session together
// with list_functions() and help(name) for the model to discover them, and
// Tools exports each schema as a JSON-schema tool definition.
//
// Registry.Stubs feeds the type checker: it writes the registered
// functions and the two built-ins as a Python stub module (Function.Stub
// writes one), with parameter types, defaults, return types
// (Schema.ReturnType, which Func infers from the Go result) and async
// def for async functions. The checker star-imports it into the code it
// checks, so a call with an argument of the wrong type, a missing or
// unknown argument, or an async function's result used without await is
// reported before the code runs.
//
// # Events
//
// Run executes code in a session and reports, in order and as it happens:
// RunStarted; TextStart/TextContent/TextEnd for print output;
// ToolCallStart/ToolCallArgs/ToolCallEnd/ToolCallResult for each host
// function call; then RunFinished with the value, or RunError. Package
// agui maps them to AG-UI events.
//
// # execute_python
//
// An Executor runs execute_python tool calls: Execute(ctx, threadKey,
// argsJSON) returns the text for the model (print output, then the repr of
// the final value, or the traceback) and a structured Result. Each thread
// key has its own session in a session.Manager whose state is saved in the
// configured store after every call, so a conversation continues across
// processes. Each call is bounded by a timeout (5 s by default, host calls
// included), a memory limit (16 MB) and a host-call budget (1000 calls); a
// call that fails any of them leaves the session as it was before the
// call. Calls on one session wait for each other; calls on different
// sessions run in parallel. Reset clears a session.
//
// # Concurrency
//
// Registry and Executor are safe for concurrent use. Schema, Param,
// Function, Tool, Event and Result are plain values: safe to share between
// goroutines as long as nobody modifies them.
package agent
