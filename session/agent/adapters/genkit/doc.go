// Package montygenkit offers Monty's execute_python tool to agents built
// with Genkit for Go (github.com/firebase/genkit/go), as Genkit tools for
// genkit.Generate, ai.Generate and prompts (ai.WithTools).
//
// An Adapter wraps an agent.Executor. Tools gives the executor's tools
// (execute_python and resume_python) as Genkit tools (made with ai.NewTool
// and ai.WithInputSchema): each carries the tool's name, description and
// the executor's JSON schema as its input schema, and its function runs
// the model's call and returns what goes back to the model as the tool
// response's output (a string). Call answers one call, for code that
// dispatches tool requests of its own (with ai.WithReturnToolRequests,
// say).
//
// Genkit's tool functions name no conversation, so the tools are bound to
// one when they are made: Tools(conversation) takes the executor's thread
// key, and every call of those tools runs in that conversation's own
// Python session (variables, functions and classes persist from one call
// to the next, in the executor's store). Two conversations never see each
// other's state. Pass the tools of the conversation to each Generate
// call; Genkit registers them for that call only.
//
// What the code does wrong is the model's to read and correct, so it is
// the tool's output, not a Go error (which would end Genkit's generate
// loop): a Python exception (the traceback), a limit hit, arguments the
// executor refuses, a tool name the adapter does not know. The Go error
// is for what the caller must handle: its context ended, the executor is
// closed, or the conversation key is not a valid thread key.
//
// Genkit itself checks a tool request's input against the tool's input
// schema before the tool runs, and ends the generate loop with an error
// (INVALID_ARGUMENT) when it does not fit: arguments that do not match
// the executor's JSON schema (no "code", a number for it) never reach
// the adapter. Genkit also formats a tool's error into its own (with %v),
// so the error Generate returns does not match the adapter's with
// errors.Is; the adapter's errors do, from Call and from the tool's
// function (ai.Tool.RunRaw).
//
// This package is a module of its own, so that depending on
// github.com/monty-go/monty does not pull in Genkit.
//
// # Concurrency
//
// An Adapter and its tools are safe for concurrent use, as the executor
// is. Calls for one conversation run one at a time; calls for different
// conversations run in parallel. Genkit runs the tool requests of one
// model message in parallel, so calls of one message for one conversation
// take their turns in the session in an order of their own: prompt the
// model to make one execute_python call per message when its calls build
// on each other.
package montygenkit
