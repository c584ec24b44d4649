// Package mcpserver offers Python execution to any Model Context Protocol
// client: an MCP server (github.com/modelcontextprotocol/go-sdk) with three
// tools,
//
//   - execute_python: run code in a persistent session (variables,
//     functions and classes survive between calls and, through the
//     executor's store, between server processes); optional session_id
//     selects one of several named sessions; optional client_tools names
//     functions the model answers itself;
//   - resume_python: answer the client tool calls a run is paused at;
//   - reset_session: forget a session's state.
//
// MCP gives a server no way to call the client's tools while a tool call
// runs, so client tools go through the model: a call pauses the run (it
// is stored, and may be resumed by another server process), the result
// lists the calls, and the model answers them with resume_python (for
// example with what its other tools return).
//
// The tools are served by an agent.Executor, so host functions registered
// there are callable from the code and listed in the tool's description.
// `monty mcp` runs this server over stdio with NewStdioTransport, which
// answers malformed input lines with JSON-RPC errors instead of ending the
// connection.
//
// A session whose stored state cannot be loaded (damaged, of another
// format, signed with another key) starts empty by default: the state is
// kept aside, and the first call's result text starts with a note saying
// so (and the log has a record). With the executor's FailOnCorruptState the
// call is a tool error instead, telling to call reset_session.
//
// Each tool call is a server span "tools/call <tool>" of the executor's
// Telemetry (package telemetry), with the execution's span under it. A
// client that puts W3C trace context (traceparent, tracestate) at the top
// level of the request's _meta, as MCP's tracing convention does, gets
// these spans in its own trace; without it, or with a malformed one, the
// call starts a new trace.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/telemetry"
)

// DefaultThreadKey is the conversation key of sessions created through
// MCP when Options.ThreadKey is empty.
const DefaultThreadKey = "mcp"

// resetSchema is the input schema of reset_session.
const resetSchema = `{
  "type": "object",
  "properties": {
    "session_id": {
      "type": "string",
      "description": "The named session to reset, as given to execute_python; omit it for the default session."
    }
  },
  "additionalProperties": false
}`

// resultSchema is the output schema of execute_python and resume_python:
// the structured content of their results (agent.Result). Every id in it
// is one the next call takes as it is.
const resultSchema = `{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "What the call printed, then the value of the last expression or the error, or how to answer a pause."},
    "output": {"type": "string", "description": "What the code printed."},
    "result": {"type": "string", "description": "repr() of the value of the last expression, unless it is None."},
    "error_type": {"type": "string", "description": "The Python exception type when the code failed (TimeoutError, MemoryError, TypeCheckError, ...)."},
    "error": {"type": "string", "description": "The traceback or reason when the code failed."},
    "session_id": {"type": "string", "description": "The session_id the call named (absent for the default session): give it to resume_python and reset_session."},
    "run_id": {"type": "string", "description": "Present when the run is paused: the run_id resume_python takes."},
    "saved": {"type": "boolean", "description": "Whether the call stored new session state."},
    "state_size": {"type": "integer", "description": "Size of the stored state in bytes."},
    "state_hash": {"type": "string", "description": "SHA-256 of the stored state."},
    "not_saved": {"type": "string", "description": "Why the state of a successful call was not stored."},
    "state_warning": {"type": "string", "description": "Why the session did not continue from its stored state."},
    "paused": {
      "type": "object",
      "description": "Present when the code called client tools: answer the calls with resume_python.",
      "properties": {
        "run_id": {"type": "string", "description": "The run_id resume_python takes (the same as the top-level run_id)."},
        "session_id": {"type": "string", "description": "The session_id resume_python takes (absent for the default session)."},
        "calls": {
          "type": "array",
          "items": {
            "type": "object",
            "properties": {
              "id": {"type": "string", "description": "The id of this call's result in resume_python."},
              "name": {"type": "string"},
              "args": {"type": "array", "description": "Positional arguments as JSON."},
              "kwargs": {"type": "object", "description": "Keyword arguments as JSON."},
              "call": {"type": "string", "description": "The call as Python spells it."},
              "blocking": {"type": "boolean", "description": "The code is stopped at this call: answer it, alone."},
              "approval": {"type": "boolean", "description": "The call needs a person's approval: answer it with approve true or false, never a value."}
            },
            "required": ["id", "name", "args", "kwargs", "call"]
          }
        },
        "expires": {"type": "string", "format": "date-time", "description": "When the paused run is dropped unless resumed."}
      },
      "required": ["run_id", "calls", "expires"]
    }
  },
  "required": ["text", "output", "saved"]
}`

// Options configure a server.
type Options struct {
	// Executor runs the code. Required; the caller closes it after the
	// server is done.
	Executor *agent.Executor
	// ThreadKey is the conversation the sessions belong to (see
	// agent.Executor.Execute); DefaultThreadKey when empty. Servers sharing
	// a store and a thread key share sessions.
	ThreadKey string
	// Version is reported to clients as the server's version.
	Version string
	// Logger receives a record per tool call; nil logs nothing.
	Logger *slog.Logger
	// Approvals says who decides the calls that wait for a person's
	// approval; "" is ApprovalsUserFirst.
	Approvals ApprovalPolicy
	// ConsoleURL, when set, is where an operator decides approvals (the
	// console of `monty serve`, at /ui, sharing this server's store): a
	// run paused at approvals names it.
	ConsoleURL string
	// ConsoleSession, when set, names the session of a run paused at
	// approvals as the console shows it, given the store id
	// (agent.Result.StoreID); the pause's text names it beside ConsoleURL.
	// For sessions kept in an API namespace (agent.ExecutorOptions.StoreID
	// with apikey.ThreadSessionID), the id after the namespace.
	ConsoleSession func(storeID string) string
}

// New returns an MCP server offering execute_python, resume_python and
// reset_session.
// Run it with (*mcp.Server).Run over a transport, e.g.
// NewStdioTransport(os.Stdin, os.Stdout, logger).
// The server is safe for concurrent use, as the executor is: calls for one
// session run one at a time, others in parallel.
func New(opts Options) (*mcp.Server, error) {
	if opts.Executor == nil {
		return nil, errors.New("mcpserver: Options.Executor is required")
	}
	if opts.ThreadKey == "" {
		opts.ThreadKey = DefaultThreadKey
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	policy, err := ParseApprovalPolicy(string(opts.Approvals))
	if err != nil {
		return nil, fmt.Errorf("mcpserver: Options.Approvals: %w", err)
	}
	h := &handlers{exec: opts.Executor, thread: opts.ThreadKey, log: logger, policy: policy, consoleURL: opts.ConsoleURL, consoleSession: opts.ConsoleSession, stateKey: newStateKey()}
	srv := mcp.NewServer(&mcp.Implementation{Name: "monty", Title: "Monty Python sandbox", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "Run Python in a sandbox with execute_python. State persists between calls: define a variable " +
			"or function in one call and use it in the next. Use reset_session to start over. Functions you answer " +
			"yourself can be given as client_tools: a call pauses the run, and resume_python continues it with your results.",
	})
	tool := opts.Executor.Tool()
	srv.AddTool(&mcp.Tool{Name: tool.Name, Description: tool.Description, InputSchema: tool.Parameters, OutputSchema: json.RawMessage(resultSchema)}, h.traced(h.execute))
	resume := opts.Executor.ResumeTool()
	srv.AddTool(&mcp.Tool{Name: resume.Name, Description: resume.Description, InputSchema: resume.Parameters, OutputSchema: json.RawMessage(resultSchema)}, h.traced(h.resume))
	srv.AddTool(&mcp.Tool{
		Name:        "reset_session",
		Description: "Forget everything a Python session holds (variables, functions, classes), so the next execute_python call starts empty.",
		InputSchema: json.RawMessage(resetSchema),
	}, h.traced(h.reset))
	return srv, nil
}

type handlers struct {
	exec           *agent.Executor
	thread         string
	log            *slog.Logger
	policy         ApprovalPolicy
	consoleURL     string
	consoleSession func(storeID string) string // Options.ConsoleSession
	stateKey       []byte                      // signs the request states of approvals' input requests
}

// traced runs handler under a server span "tools/call <tool>" of the
// executor's Telemetry, a child of the W3C trace context (traceparent,
// tracestate) the client put in the request's _meta, or the root of a new
// trace when there is none or it is malformed; the execution's span is a
// child of it. The span ends failed when the result is a tool error or
// the handler fails.
func (h *handlers) traced(handler mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, span := h.exec.Telemetry().StartMCPServer(ctx, req.Params.Name, req.Params.GetMeta())
		defer span.End()
		res, err := handler(ctx, req)
		switch {
		case err != nil:
			telemetry.Fail(span, err)
		case res != nil && res.IsError && span.IsRecording():
			span.SetAttributes(telemetry.AttrErrorType.String("tool_error"))
			span.SetStatus(codes.Error, errorDescription(res))
		}
		return res, err
	}
}

// errorDescription is the span status of a tool error: the Python
// exception type of a failed run, else the start of the result's text.
func errorDescription(res *mcp.CallToolResult) string {
	if r, ok := res.StructuredContent.(*agent.Result); ok && r.ErrorType != "" {
		return telemetry.Clip(r.ErrorType)
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return telemetry.Clip(t.Text)
		}
	}
	return "tool error"
}

// execute runs one execute_python call. Failures of the code (exceptions,
// limits, bad arguments) are tool errors the model can read and correct;
// protocol errors are reserved for failures of the server itself.
// A run paused at calls that wait for approval asks the client's user
// first, when it can (see ApprovalPolicy).
func (h *handlers) execute(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	a := h.approverFor(req.Session)
	if req.Params.RequestState != "" {
		return a.answered(ctx, req, start), nil
	}
	res, err := h.exec.Execute(ctx, h.thread, req.Params.Arguments)
	return a.settle(ctx, agent.ToolName, res, err, start), nil
}

// answer is the tool result of an execute_python or resume_python call.
func (h *handlers) answer(tool string, res *agent.Result, err error) *mcp.CallToolResult {
	if errors.Is(err, agent.ErrBadArgs) {
		h.log.Info(tool, "error", err)
		return toolError(err.Error())
	}
	if errors.Is(err, session.ErrCorrupt) {
		// The executor fails instead of starting the session empty
		// (agent.ExecutorOptions.FailOnCorruptState).
		h.log.Error(tool+": stored session state cannot be loaded", "error", err)
		return toolError("the call could not run: " + err.Error() +
			". Call reset_session (with the same session_id) to start the session empty; the copy kept aside stays.")
	}
	if err != nil {
		h.log.Error(tool, "error", err)
		return toolError("the call could not run: " + err.Error())
	}
	if res.StateWarning != "" {
		h.log.Warn(tool+": the session did not continue from its stored state", "session", res.StoreID, "warning", res.StateWarning)
	}
	h.log.Info(tool, "session", res.StoreID, "run", res.EventRunID, "paused_run", res.RunID, "error_type", res.ErrorType, "saved", res.Saved, "paused", res.Paused != nil)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: res.Text}},
		StructuredContent: res,
		IsError:           res.Err != nil,
	}
}

// resume runs one resume_python call: the model's answers to the client
// tool calls a run is paused at. Answered like execute_python.
// Where approvals are the user's (ApprovalPolicy), the model's answers
// cannot decide them.
func (h *handlers) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	a := h.approverFor(req.Session)
	switch {
	case req.Params.RequestState != "":
		return a.answered(ctx, req, start), nil
	case a.userDecides():
		return a.resume(ctx, req, start), nil
	}
	res, err := h.exec.Resume(agent.WithDecider(ctx, a.who), h.thread, req.Params.Arguments)
	return a.settle(ctx, agent.ResumeToolName, res, err, start), nil
}

// reset runs one reset_session call.
func (h *handlers) reset(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		SessionID string `json:"session_id"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return toolError(fmt.Sprintf("invalid arguments: %v; want {\"session_id\": \"name\"} or {}", err)), nil
		}
	}
	if err := h.exec.Reset(ctx, h.thread, args.SessionID); err != nil {
		h.log.Error("reset_session", "session_id", args.SessionID, "error", err)
		return toolError("the session could not be reset: " + err.Error()), nil
	}
	h.log.Info("reset_session", "session_id", args.SessionID)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "The session was reset; the next call starts empty."}}}, nil
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}
