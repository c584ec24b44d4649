//go:build !monty_lean

package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/mcpserver"
)

// mcpLimits are monty mcp's limit flags: the agent executor's time and
// memory defaults.
var mcpLimits = limitProfile{defaults: withTimeMemory(runtime.DefaultLimits(), agent.DefaultTimeout, agent.DefaultMaxMemory), service: true, host: true}

// withTimeMemory is l with time limit d and memory limit mem.
func withTimeMemory(l runtime.Limits, d time.Duration, mem int64) runtime.Limits {
	l.MaxDuration, l.MaxMemory = d, mem
	return l
}

const mcpUsage = `usage: monty mcp [flags]

Serves the execute_python and reset_session tools over the Model Context
Protocol on stdin/stdout, for MCP clients that start it as a command. Python
state persists in the session store between calls and between server runs.
With --connect, the code calls the tools of other MCP servers: --connect
time='uvx mcp-server-time' offers await time.get_current_time(timezone="UTC").
A malformed input line is answered with a JSON-RPC error and skipped. Logs
go to stderr. A session whose stored state cannot be loaded is kept aside and
started empty, and the call's result says so (--on-corrupt-state fail: the
call fails instead, and reset_session starts the session empty).

With --api-key (or --api-key-file) the sessions are kept as monty serve keeps
that API key's sessions, signed with the same --signing-key-file: the
thread's session is the API session named by --thread, and a call's
session_id S is the API session <thread>.S. monty serve with that key (its
POST /exec, POST /runs/{run_id}/resume, and its operator console at /ui)
sees, continues and decides them.

` + telemetryUsage + `
flags:
`

// mcpCommand runs `monty mcp`.
func mcpCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, exit, ok := parseMCPFlags(args, stderr)
	if !ok {
		return exit
	}
	m := &mcpService{f: f}
	defer m.close()
	if exit, err := m.build(ctx, stderr); err != nil {
		fmt.Fprintln(stderr, "monty mcp:", err)
		return exit
	}
	return m.run(ctx, stdin, stdout)
}

// mcpFlags are monty mcp's flags, parsed.
type mcpFlags struct {
	sandbox                                 *sandboxFlags
	storeSpec, thread, logLevel, consoleURL string
	signingKeyFile, apiKey, apiKeyFile      string
	maxLive                                 int
	approvals                               mcpserver.ApprovalPolicy
}

// parseMCPFlags parses args; ok is false when the command ends here,
// with exit.
func parseMCPFlags(args []string, stderr io.Writer) (f *mcpFlags, exit int, ok bool) {
	f = &mcpFlags{}
	fs := newFlagSet("monty mcp", mcpUsage, stderr)
	fs.StringVar(&f.storeSpec, "store", "", "the session store `SPEC`: "+storeFlagHelp)
	fs.StringVar(&f.thread, "thread", mcpserver.DefaultThreadKey, "conversation `KEY` the sessions belong to (servers sharing a store and key share sessions)")
	f.sandbox = addSandboxFlags(fs, sandboxHelp{
		limits:       mcpLimits,
		typeCheck:    "type-check every execute_python call before it runs (a call's type_check argument overrides this)",
		stubs:        "stub (.pyi) `FILE` declaring further names the code may use, for type checks",
		corruptWhat:  "a session",
		corruptWhere: "at the start of the call's result",
	})
	fs.Func("timeout", "the same as --max-duration `DURATION`", func(s string) error { return fs.Set("max-duration", s) })
	fs.IntVar(&f.maxLive, "max-live", 0, "most sessions kept in memory at once (0: the manager's default)")
	fs.StringVar(&f.signingKeyFile, "signing-key-file", "", "sign stored state with the key in `FILE` (or set MONTY_SIGNING_KEY); default unsigned, like monty --session")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	approvals := fs.String("approvals", string(mcpserver.ApprovalsUserFirst), "who decides the calls that wait for approval: "+
		"user-first (the user, asked through the client's elicitation; a client without it answers with resume_python) "+
		"or user-only (the user; without elicitation such calls are refused)")
	fs.StringVar(&f.consoleURL, "console-url", "", "the `URL` of an operator console (monty serve's /ui on the same store), named in a run paused at approvals")
	fs.StringVar(&f.apiKey, "api-key", "", "keep the sessions in this API `KEY`'s namespace, as monty serve does, so that its API and console with the key see them (needs the signing key monty serve uses)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "read the --api-key from `FILE` (monty serve's format: one key a line, # comments; exactly one key)")
	if exit, ok := parseFlags(fs, args); !ok {
		return nil, exit, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "monty mcp: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return nil, ExitUsage, false
	}
	var err error
	if f.approvals, err = mcpserver.ParseApprovalPolicy(*approvals); err != nil {
		fmt.Fprintln(stderr, "monty mcp: --approvals:", err)
		return nil, ExitUsage, false
	}
	return f, ExitOK, true
}

// mcpService is what monty mcp builds and runs: an MCP server over an
// executor, its store, engine, checker and MCP servers, and what closes
// them, last opened first closed. It is not safe for concurrent use.
type mcpService struct {
	f       *mcpFlags
	logger  *slog.Logger
	srv     *mcp.Server
	closers []func()
}

func (m *mcpService) close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
}

// build opens what the MCP server needs and makes it; the exit code goes
// with an error.
func (m *mcpService) build(ctx context.Context, stderr io.Writer) (int, error) {
	f := m.f
	// Only the operator names host directories; the tool's callers see the
	// guest paths.
	sb, err := f.sandbox.setup(true) // each session's own files are at /work
	if err != nil {
		return ExitUsage, err
	}
	m.closers = append(m.closers, func() { sb.mounts.Close() })
	if m.logger, err = newLogger("text", f.logLevel, stderr); err != nil {
		return ExitUsage, err
	}
	// First, so that the last spans are flushed after what follows has
	// stopped.
	tel, stopTelemetry, err := startTelemetry(ctx, m.logger)
	if err != nil {
		return ExitUsage, err
	}
	m.closers = append(m.closers, stopTelemetry)
	var key []byte
	if f.signingKeyFile != "" || os.Getenv("MONTY_SIGNING_KEY") != "" {
		if key, err = signingKey(f.signingKeyFile); err != nil {
			return ExitUsage, err
		}
	}
	ns, err := mcpNamespace(f.apiKey, f.apiKeyFile, f.thread, key)
	if err != nil {
		return ExitUsage, err
	}
	execOpts, exit, err := m.openBackends(ctx, sb, key)
	if err != nil {
		return exit, err
	}
	execOpts.Session.Telemetry = tel.Telemetry
	var consoleSession func(storeID string) string
	if ns != "" {
		execOpts.StoreID, execOpts.Keys = namespacedSessions(ns, key)
		consoleSession = func(storeID string) string { return strings.TrimPrefix(storeID, ns+"/") }
	}
	exec, err := agent.NewExecutor(execOpts)
	if err != nil {
		return ExitUsage, err
	}
	m.srv, err = mcpserver.New(mcpserver.Options{Executor: exec, ThreadKey: f.thread, Version: about().Version, Logger: m.logger,
		Approvals: f.approvals, ConsoleURL: f.consoleURL, ConsoleSession: consoleSession})
	if err != nil {
		return ExitUsage, err
	}
	limits := execOpts.Session.Limits
	m.logger.Info("monty mcp: serving on stdio", "thread", f.thread, "namespace", cmp.Or(ns, "(none: monty mcp's own layout)"), "max_duration", f.sandbox.limits.duration.String(),
		"max_memory", limits.MaxMemory, "max_output", limits.MaxOutput, "max_result", limits.MaxResult, "mounts", mountList(sb.mounts.Specs()))
	return ExitOK, nil
}

// openBackends opens the store, the MCP servers (at start: a server that
// cannot be reached is the operator's to fix now, not the model's later),
// the engine and the checker, and returns the executor's options.
func (m *mcpService) openBackends(ctx context.Context, sb *sandbox, key []byte) (agent.ExecutorOptions, int, error) {
	st, err := openStore(ctx, m.f.storeSpec)
	if err != nil {
		return agent.ExecutorOptions{}, storeExit(err), err
	}
	m.closers = append(m.closers, func() { st.Close() })
	servers, err := m.f.sandbox.connect.connect(ctx, sb.conns, m.logger)
	if err != nil {
		return agent.ExecutorOptions{}, connectExit(err), err
	}
	m.closers = append(m.closers, servers.Close)
	engine, err := serviceEngine(ctx, "", m.logger)
	if err != nil {
		return agent.ExecutorOptions{}, ExitException, err
	}
	m.closers = append(m.closers, func() { engine.Close(context.Background()) })
	checker := typecheck.Lazy(typecheck.WithLogger(m.logger))
	m.closers = append(m.closers, func() { checker.Close(context.Background()) })
	if sb.typeCheck {
		// Every call is checked: compile the checker now, in the
		// background, rather than in the first call.
		go func() { _ = checker.Load(context.Background()) }()
	}
	// The process's keeper of live sessions, closed before the engine and
	// the store.
	keeper := session.NewManager(session.Options{Store: st, Engine: engine}, session.ManagerOptions{MaxLive: m.f.maxLive})
	m.closers = append(m.closers, keeper.Close)
	return agent.ExecutorOptions{
		Keeper:    keeper,
		Session:   session.Options{Store: st, Engine: engine, SigningKey: key, Limits: sb.limits, Files: &session.Files{}},
		Functions: servers.reg,
		// Compiled at the first checked call, so that a server whose
		// calls are never checked does not load it.
		TypeCheck: sb.typeCheck,
		Stubs:     sb.stubs,
		Checker:   checker,
		OS:        osHandler(sb.mounts),
		// The description tells the model which directories it finds.
		Mounts: sb.mounts.Specs(),
		// A session whose stored state does not load is kept aside and
		// started empty (the call's text says so), unless told to fail.
		FailOnCorruptState: sb.failOnCorrupt,
		// Decisions on approvals are logged with the server's log.
		Logger: m.logger,
	}, ExitOK, nil
}

// run serves the MCP server on stdio until the client disconnects.
func (m *mcpService) run(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	start := time.Now()
	// Malformed input lines are answered with JSON-RPC errors and skipped
	// instead of ending the connection.
	err := m.srv.Run(ctx, mcpserver.NewStdioTransport(stdin, stdout, m.logger))
	if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
		m.logger.Error("monty mcp: connection ended", "error", err)
		return ExitException
	}
	m.logger.Info("monty mcp: client disconnected", "uptime", time.Since(start).Round(time.Millisecond).String())
	return ExitOK
}

// mcpNamespace is the API namespace monty mcp keeps its sessions in: that
// of the key given by --api-key or --api-key-file, or "" when neither is
// given. The key needs the signing key (the API signs each session with
// a key derived from it) and a thread key that names an API session.
func mcpNamespace(flag, file, thread string, signing []byte) (string, error) {
	if flag == "" && file == "" {
		return "", nil
	}
	if flag != "" && file != "" {
		return "", errors.New("give --api-key or --api-key-file, not both")
	}
	keys, which := []string{flag}, "--api-key"
	if file != "" {
		var err error
		if keys, err = apiKeyFile(file); err != nil {
			return "", fmt.Errorf("--api-key-file: %w", err)
		}
		which = "--api-key-file " + file
	}
	if err := checkAPIKeys(keys); err != nil {
		return "", fmt.Errorf("%s: %w", which, err)
	}
	// A NAME=KEY entry, as monty serve takes it, is the key KEY.
	keys, _ = namedKeys(keys)
	if len(keys) != 1 {
		return "", fmt.Errorf("--api-key-file %s holds %d keys: monty mcp keeps its sessions in one key's namespace, so give a file with exactly one", file, len(keys))
	}
	if len(signing) == 0 {
		return "", fmt.Errorf("--api-key needs the signing key monty serve uses (the API signs each session with a key derived from it): set MONTY_SIGNING_KEY or --signing-key-file, at least %d bytes", httpapi.MinSigningKey)
	}
	if _, err := apikey.ThreadSessionID(thread, ""); err != nil {
		return "", fmt.Errorf("--thread %q: with --api-key the thread's session is an API session, so use 1-%d letters, digits, '_' or '-' (no '.')", thread, apikey.MaxSessionID)
	}
	return apikey.NamespaceOf(keys[0]), nil
}

// namespacedSessions are the executor's hooks that keep the sessions of
// monty mcp in API namespace ns as monty serve does: the store id of
// apikey.ThreadSessionID, signed with the per-session key the API uses.
func namespacedSessions(ns string, signing []byte) (storeID func(thread, sessionID string) (string, error), keys func(id string) ([]byte, [][]byte)) {
	storeID = func(thread, sessionID string) (string, error) {
		id, err := apikey.ThreadSessionID(thread, sessionID)
		if err != nil {
			return "", err
		}
		return apikey.StoreID(ns, id), nil
	}
	keys = func(id string) ([]byte, [][]byte) { return apikey.StoreKeys(signing, id) }
	return storeID, keys
}
