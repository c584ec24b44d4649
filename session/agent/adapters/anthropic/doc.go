// Package montyanthropic offers Monty's execute_python tool to models
// driven through Anthropic's Go SDK (github.com/anthropics/anthropic-sdk-go),
// with Messages API tool use blocks. It builds on the SDK's v2 line,
// github.com/anthropics/anthropic-sdk-go/v2: the module path without /v2
// ends at v1.84.0, and v2 is the line that is released now.
//
// An Adapter wraps an agent.Executor. Tools gives the executor's tools
// (execute_python and resume_python, built from their names, descriptions
// and JSON schemas) as the SDK's tool parameters; Handle runs the model's
// tool_use blocks and returns what goes back to the model: a tool_result
// block per tool_use block, with is_error set where the call failed, for
// the next user message. Call answers one call, for loops that dispatch
// tools of their own too.
//
// Every call names a conversation: the key is the executor's thread key,
// so each conversation keeps its own Python session (variables, functions
// and classes persist from one call to the next, in the executor's store),
// and two conversations never see each other's state.
//
// What the code does wrong is the model's to read and correct, so it is
// the tool's result (with is_error), not a Go error: a Python exception
// (the traceback), a limit hit, input that is not what the tool takes, a
// tool name the adapter does not know. The Go error is for what the caller
// must handle: its context ended, the executor's keeper is closed, or the
// conversation key is not a valid thread key.
//
// This package is a module of its own, so that depending on
// github.com/monty-go/monty does not pull in the Anthropic SDK.
//
// # Concurrency
//
// An Adapter is safe for concurrent use, as its executor is. Calls for one
// conversation run one at a time; calls for different conversations run
// in parallel.
package montyanthropic
