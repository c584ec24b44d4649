// Package agent is the tool surface for LLM agents: the execute_python
// and resume_python tools, with an executor that keeps one persistent
// session per conversation, a protocol-neutral event stream per run, the
// briefing that tells the model what it may call, and answers to paused
// runs, approvals included. The functions Python calls come from a
// registry of package tools (Go functions and classes) and of package
// mcpclient (MCP servers: code mode); the adapters under agent/adapters
// give the tools to each agent SDK, each around an Adapter, the part they
// share: a call answered as text, errors named after the adapter, the
// conversation key checked, the tool definitions.
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
// Executor is safe for concurrent use. Event, Result, ToolArgs and the
// pause types are plain values: safe to share between goroutines as long
// as nobody modifies them.
package agent
