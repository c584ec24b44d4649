// Package montygenai offers Monty's execute_python tool to Gemini models
// driven through the Google Gen AI Go SDK (google.golang.org/genai), with
// function declarations, function calls and function responses.
//
// An Adapter wraps an agent.Executor. Tools gives the executor's tools
// (execute_python and resume_python, built from their names, descriptions
// and JSON schemas) as the SDK's function declarations; Handle runs the
// model's function calls and returns what goes back to the model: a
// function response part per function call, with the call's ID and name,
// for the next user content. Call answers one call, for loops that
// dispatch functions of their own too.
//
// Every call names a conversation: the key is the executor's thread key,
// so each conversation keeps its own Python session (variables, functions
// and classes persist from one call to the next, in the executor's store),
// and two conversations never see each other's state.
//
// What the code does wrong is the model's to read and correct, so it is
// the function's response (under its "error" key, where a call that
// succeeded answers under "output", as Gemini reads
// FunctionResponse.Response), not a Go error: a Python exception (the
// traceback), a limit hit, arguments that are not what the tool takes, a
// function name the adapter does not know. The Go error is for what the
// caller must handle: its context ended, the executor's keeper is closed, or the
// conversation key is not a valid thread key.
//
// This package is a module of its own, so that depending on
// github.com/monty-go/monty does not pull in the Gen AI SDK.
//
// # Concurrency
//
// An Adapter is safe for concurrent use, as its executor is. Calls for one
// conversation run one at a time; calls for different conversations run
// in parallel.
package montygenai
