// Package montyopenai offers Monty's execute_python tool to models driven
// through the OpenAI Go SDK (github.com/openai/openai-go/v3), with Chat
// Completions tool calls or Responses API function calls.
//
// An Adapter wraps an agent.Executor. ChatTools and ResponseTools give the
// executor's tools (execute_python and resume_python, built from their
// names, descriptions and JSON schemas) as the SDK's tool parameters;
// HandleChat and HandleResponse run the model's calls of them and return
// what goes back to the model: a tool message per tool call, or a
// function_call_output item per function call. Call answers one call,
// for loops that dispatch tools of their own too.
//
// Every call names a conversation: the key is the executor's thread key,
// so each conversation keeps its own Python session (variables, functions
// and classes persist from one call to the next, in the executor's store),
// and two conversations never see each other's state.
//
// What the code does wrong is the model's to read and correct, so it is
// the tool's output, not a Go error: a Python exception (the traceback),
// a limit hit, arguments that are not what the tool takes, a tool name the
// adapter does not know. The Go error is for what the caller must handle:
// its context ended, the executor's keeper is closed, or the conversation key is
// not a valid thread key.
//
// This package is a module of its own, so that depending on
// github.com/monty-go/monty does not pull in the OpenAI SDK.
//
// # Concurrency
//
// An Adapter is safe for concurrent use, as its executor is. Calls for one
// conversation run one at a time; calls for different conversations run
// in parallel.
package montyopenai
