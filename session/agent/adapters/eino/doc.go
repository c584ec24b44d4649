// Package montyeino offers Monty's execute_python tool to agents built
// with CloudWeGo Eino (github.com/cloudwego/eino), as invokable tools for
// Eino's tools node, its ReAct agent and its graphs.
//
// An Adapter wraps an agent.Executor. Tools gives the executor's tools
// (execute_python and resume_python) as Eino tools (tool.InvokableTool):
// their Info carries each tool's name, description and JSON schema (as
// schema.NewParamsOneOfByJSONSchema), and their InvokableRun runs the
// model's call and returns what goes back to the model as the tool
// message's content. Call answers one call, for loops that dispatch tools
// of their own too.
//
// Eino's InvokableRun names no conversation, so the tools are bound to
// one when they are made: Tools(conversation) takes the executor's thread
// key, and every call of those tools runs in that conversation's own
// Python session (variables, functions and classes persist from one call
// to the next, in the executor's store). Two conversations never see each
// other's state. Make an agent (or its tools node) per conversation.
//
// What the code does wrong is the model's to read and correct, so it is
// the tool's output, not a Go error (which would end Eino's graph run): a
// Python exception (the traceback), a limit hit, arguments that are not
// what the tool takes, a tool name the adapter does not know. The Go
// error is for what the caller must handle: its context ended, the
// executor's keeper is closed, or the conversation key is not a valid
// thread key.
//
// This package is a module of its own, so that depending on
// github.com/monty-go/monty does not pull in Eino.
//
// # Concurrency
//
// An Adapter and its tools are safe for concurrent use, as the executor
// is. Calls for one conversation run one at a time; calls for different
// conversations run in parallel.
package montyeino
