// Package montylangchaingo offers Monty's execute_python tool to agents
// built with LangChainGo (github.com/tmc/langchaingo), as tools.Tool
// values for its agents and their executor (agents.NewOneShotAgent,
// agents.NewConversationalAgent, agents.NewOpenAIFunctionsAgent, then
// agents.NewExecutor).
//
// An Adapter wraps an agent.Executor. A LangChainGo tool has no notion of
// a conversation, so the conversation is bound when the tool is made:
// Tool(conversation) is execute_python and ResumeTool(conversation) is
// resume_python for that conversation, and Tools(conversation) gives
// both. Call answers one call by tool name, for code that dispatches
// tools itself.
//
// The conversation key is the executor's thread key, so each conversation
// keeps its own Python session (variables, functions and classes persist
// from one call to the next, in the executor's store), and two
// conversations never see each other's state. Make the tools anew, with
// its key, for each conversation.
//
// # Input
//
// A LangChainGo tool takes one input string (the text after "Action
// Input:", or the single __arg1 argument of the OpenAI functions agent).
// execute_python reads it so:
//
//   - input that is a JSON object is the tool's arguments, as the
//     executor takes them: {"code": "...", "session_id": "...",
//     "type_check": true, "client_tools": [...]};
//   - any other input is the Python code itself, to run with no other
//     arguments. A whole input in a Markdown code fence (```python ...
//     ```) is the code inside it.
//
// So Python whose whole text is also a JSON object (a dict display such
// as {"a": 1}) is taken as arguments; a model that wants to run it sends
// {"code": "{\"a\": 1}"}. resume_python takes only its JSON object. The
// tools' descriptions tell the model this, with the JSON schema of the
// arguments, since LangChainGo's agents show the model only the names
// and descriptions of their tools.
//
// # Errors
//
// What the code does wrong is the model's to read and correct, so it is
// the tool's output, not a Go error (a Go error from a tool ends
// LangChainGo's agent loop): a Python exception (the traceback), a limit
// hit, input that is not what the tool takes. The Go error is for what
// the caller must handle: its context ended, the executor's keeper is closed, or
// the conversation key is not a valid thread key.
//
// This package is a module of its own, so that depending on
// github.com/monty-go/monty does not pull in LangChainGo.
//
// # Concurrency
//
// An Adapter and its tools are safe for concurrent use, as the executor
// is. Calls for one conversation run one at a time; calls for different
// conversations run in parallel.
package montylangchaingo
