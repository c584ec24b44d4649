package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/tools"
)

// connectFlags are the flags that connect MCP servers, whose tools the
// code then calls as the async methods of a namespace (`await
// time.get_current_time(timezone="UTC")`): --connect, --connect-header,
// --connect-allow, --connect-deny, --approve and --connect-timeout. monty (-c, FILE,
// the REPL), monty mcp and monty serve register them with
// addConnectFlags; servers checks them and connect connects. The tools
// of --connect-allow, --connect-deny and --approve are named by their MCP
// or Python names; connect refuses a name of no tool of the server with a
// usage error.
type connectFlags struct {
	connects, headers, allow, deny, approve []string
	timeout                                 time.Duration
}

// defaultConnectTimeout is --connect-timeout's default: long enough for
// a server that npx or uvx first downloads.
const defaultConnectTimeout = 30 * time.Second

// addConnectFlags registers the connect flags on fs.
func addConnectFlags(fs *flag.FlagSet) *connectFlags {
	c := &connectFlags{}
	list := func(dst *[]string) func(string) error {
		return func(s string) error {
			*dst = append(*dst, s)
			return nil
		}
	}
	fs.Func("connect", "connect the MCP server `NAME=COMMAND [ARGS...]` (stdio; the words are split as a shell would, expanding nothing) or NAME=http[s]://HOST/PATH (streamable HTTP); "+
		"the code calls its tools as async methods: await NAME.tool(arg=value) (repeatable)", list(&c.connects))
	fs.Func("connect-header", "send the header `NAME=Header: value` in every request to the HTTP MCP server NAME (repeatable)", list(&c.headers))
	fs.Func("connect-allow", "offer only these tools of the MCP server NAME, by their MCP or Python names: `NAME=tool,tool` (repeatable; a name of no tool refuses to start)", list(&c.allow))
	fs.Func("connect-deny", "do not offer these tools of the MCP server NAME, by their MCP or Python names: `NAME=tool,tool` (repeatable; a name of no tool refuses to start)", list(&c.deny))
	fs.Func("approve", "calls of these tools of the MCP server NAME, by their MCP names (get-sum) or Python names (get_sum), wait for a person's approval, as destructiveHint tools do: the run pauses, and resume_python (or POST /runs/{run_id}/resume) answers approve true or false: `NAME=tool,tool` (repeatable; a name of no tool refuses to start)", list(&c.approve))
	fs.DurationVar(&c.timeout, "connect-timeout", defaultConnectTimeout, "how long each --connect server may take to start and list its tools")
	return c
}

// mcpConnection is one --connect server and what the other flags say
// about it.
type mcpConnection struct {
	name string
	// argv is a stdio server's command line; url an HTTP server's
	// endpoint, sent header.
	argv        []string
	url         string
	header      http.Header
	allow, deny []string
	approve     []string
}

// servers checks the flags and returns the servers they name, in order.
// Every error is a usage error.
func (c *connectFlags) servers() ([]*mcpConnection, error) {
	if c.timeout <= 0 {
		return nil, errors.New("--connect-timeout must be positive, like 30s")
	}
	var conns []*mcpConnection
	byName := map[string]*mcpConnection{}
	for _, spec := range c.connects {
		name, target, ok := strings.Cut(spec, "=")
		if !ok {
			return nil, fmt.Errorf("--connect %q: want NAME=COMMAND [ARGS...] or NAME=URL, like time='uvx mcp-server-time'", spec)
		}
		if err := checkServerName(name); err != nil {
			return nil, fmt.Errorf("--connect %s: %w", spec, err)
		}
		if byName[name] != nil {
			return nil, fmt.Errorf("--connect: two servers are named %s: give each its own NAME", name)
		}
		conn := &mcpConnection{name: name}
		if lower := strings.ToLower(strings.TrimSpace(target)); strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") {
			u, err := url.Parse(strings.TrimSpace(target))
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("--connect %s: %q is not an http:// or https:// URL with a host", name, target)
			}
			conn.url, conn.header = u.String(), http.Header{}
		} else {
			argv, err := splitCommand(target)
			if err != nil {
				return nil, fmt.Errorf("--connect %s: %w", name, err)
			}
			if _, err := exec.LookPath(argv[0]); err != nil {
				return nil, fmt.Errorf("--connect %s: %w: give the command's path, or install it", name, err)
			}
			conn.argv = argv
		}
		conns = append(conns, conn)
		byName[name] = conn
	}
	// The other flags name a server of --connect.
	of := func(flagName, spec string) (*mcpConnection, string, error) {
		name, rest, ok := strings.Cut(spec, "=")
		conn := byName[name]
		switch {
		case !ok:
			return nil, "", fmt.Errorf("--%s %q: want NAME=…, NAME being a server of --connect", flagName, spec)
		case conn == nil:
			return nil, "", fmt.Errorf("--%s %s: no --connect server is named %s (%s)", flagName, spec, name, namesOf(conns))
		}
		return conn, rest, nil
	}
	for _, spec := range c.headers {
		conn, header, err := of("connect-header", spec)
		if err != nil {
			return nil, err
		}
		if conn.url == "" {
			return nil, fmt.Errorf("--connect-header %s: %s is a stdio server; headers go to HTTP servers", spec, conn.name)
		}
		key, value, ok := strings.Cut(header, ":")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || !validHeaderName(key) || strings.ContainsAny(value, "\r\n\x00") {
			return nil, fmt.Errorf("--connect-header %s=…: want NAME=Header: value, like %s='Authorization: Bearer TOKEN'", conn.name, conn.name)
		}
		conn.header.Add(key, value)
	}
	for _, f := range []struct {
		flag  string
		specs []string
		dst   func(*mcpConnection) *[]string
	}{
		{"connect-allow", c.allow, func(c *mcpConnection) *[]string { return &c.allow }},
		{"connect-deny", c.deny, func(c *mcpConnection) *[]string { return &c.deny }},
		{"approve", c.approve, func(c *mcpConnection) *[]string { return &c.approve }},
	} {
		for _, spec := range f.specs {
			conn, list, err := of(f.flag, spec)
			if err != nil {
				return nil, err
			}
			var tools []string
			for tool := range strings.SplitSeq(list, ",") {
				if tool = strings.TrimSpace(tool); tool != "" {
					tools = append(tools, tool)
				}
			}
			if len(tools) == 0 {
				return nil, fmt.Errorf("--%s %s: name the tools, like %s=tool,other-tool", f.flag, spec, conn.name)
			}
			dst := f.dst(conn)
			*dst = append(*dst, tools...)
		}
	}
	return conns, nil
}

// checkServerName checks a --connect NAME: a Python identifier of ASCII
// letters, digits and _, not starting with _ or a digit, not a keyword and
// not a name every registry already has.
func checkServerName(name string) error {
	if name == tools.HelpName || name == tools.ListFunctionsName {
		return fmt.Errorf("NAME %s is taken by the built-in %s(): choose another", name, name)
	}
	if py := tools.PythonName(name); py != name {
		hint := ""
		if strings.Trim(name, "_") != "" {
			hint = ", like " + py
		}
		return fmt.Errorf("NAME %q is not a Python identifier (letters, digits and _, not starting with _ or a digit, not a keyword)%s", name, hint)
	}
	return nil
}

// validHeaderName reports whether s is an HTTP header name (an RFC 9110
// token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// namesOf lists the names of conns for an error message.
func namesOf(conns []*mcpConnection) string {
	if len(conns) == 0 {
		return "there is no --connect"
	}
	names := make([]string, len(conns))
	for i, c := range conns {
		names[i] = c.name
	}
	return "the servers are " + strings.Join(names, ", ")
}

// mcpConnected is the message of the log record of a server connected.
const mcpConnected = "mcp server connected"

// mcpServers are the MCP servers a command connected to, offered as
// namespaces by one registry.
type mcpServers struct {
	// reg offers the servers; nil when there are none.
	reg        *tools.Registry
	namespaces []*mcpclient.Namespace
}

// connect connects to conns, each within --connect-timeout, and offers
// them in a new registry; without servers the registry is nil. log gets a
// record per server connected, the servers' stderr lines and their
// sessions' events. A server that cannot be reached fails the whole
// (closing the others): the command cannot offer what it was told to. A
// tool name of --connect-allow, --connect-deny or --approve that is no
// tool of its server fails it with a usageError (see connectExit).
func (c *connectFlags) connect(ctx context.Context, conns []*mcpConnection, log *slog.Logger) (*mcpServers, error) {
	s := &mcpServers{}
	if len(conns) == 0 {
		return s, nil
	}
	var err error
	if s.reg, err = tools.NewRegistry(); err != nil {
		return nil, err
	}
	for _, conn := range conns {
		ns, err := c.connectOne(ctx, s.reg, conn, log)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.namespaces = append(s.namespaces, ns)
	}
	return s, nil
}

// connectOne connects to conn and adds it to reg.
func (c *connectFlags) connectOne(ctx context.Context, reg *tools.Registry, conn *mcpConnection, log *slog.Logger) (*mcpclient.Namespace, error) {
	srv := mcpclient.Server{Name: conn.name, Allow: conn.allow, Deny: conn.deny, Approve: conn.approve, Logger: log}
	var stderr *serverStderr
	where := []any{"server", conn.name}
	if conn.url != "" {
		client := &http.Client{Transport: headerTransport{header: conn.header, next: http.DefaultTransport}}
		srv.Transport = func() (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: conn.url, HTTPClient: client}, nil
		}
		u, _ := url.Parse(conn.url)
		u.User, u.RawQuery, u.Fragment = nil, "", "" // they may hold secrets
		where = append(where, "url", u.String(), "headers", len(conn.header))
	} else {
		stderr = &serverStderr{server: conn.name, log: log}
		srv.Transport = func() (mcp.Transport, error) {
			cmd := exec.Command(conn.argv[0], conn.argv[1:]...)
			cmd.Stderr = stderr
			// A server's own children holding its stderr open do not
			// keep Close waiting.
			cmd.WaitDelay = time.Second
			return &mcp.CommandTransport{Command: cmd, TerminateDuration: stopWait}, nil
		}
		where = append(where, "command", conn.argv[0])
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ns, err := mcpclient.Add(cctx, reg, srv)
	if errors.Is(err, mcpclient.ErrUnknownTool) {
		return nil, usageError{unknownTools(conn.name, err)}
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), mcpclient.ErrServer.Error()+" "+conn.name+": ")
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case cctx.Err() != nil:
			msg = fmt.Sprintf("no answer within %s (--connect-timeout): is %s an MCP server?", c.timeout, cmp.Or(conn.url, conn.argv[0]+" (on stdio)"))
		}
		if stderr != nil {
			if tail := stderr.tail(); tail != "" {
				msg += "; its stderr ended with:\n" + tail
			}
		}
		return nil, fmt.Errorf("--connect %s: %s", conn.name, msg)
	}
	log.Info(mcpConnected, append(where, "tools", len(ns.Tools()))...)
	return ns, nil
}

// listFlags are the flags of mcpclient.Server's lists.
var listFlags = map[string]string{"Allow": "--connect-allow", "Deny": "--connect-deny", "Approve": "--approve"}

// unknownTools is the usage error of the names of --connect-allow,
// --connect-deny and --approve that are no tool of the server (err,
// Add's, matches mcpclient.ErrUnknownTool): a line per name, saying what
// it could have meant.
func unknownTools(server string, err error) error {
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	var lines []string
	for _, e := range errs {
		var u *mcpclient.UnknownToolError
		if !errors.As(e, &u) {
			lines = append(lines, e.Error())
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s=%s: %s", listFlags[u.List], server, shownName(u.Name), u.Reason()))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// shownName is a tool name of a flag as an error message shows it: as it
// is when it is short and plain, else quoted and clipped, so that it stays
// on one line.
func shownName(name string) string {
	const most = 80
	plain := len(name) <= most && !strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' })
	if plain {
		return name
	}
	if r := []rune(name); len(r) > most {
		return strconv.Quote(string(r[:most])) + "…"
	}
	return strconv.Quote(name)
}

// connectExit is the exit status of a command whose servers could not be
// connected with err (from connect): ExitUsage when the flags named a tool
// a server does not have, else ExitException.
func connectExit(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	return ExitException
}

// host is a Host offering the servers, nil when there are none.
func (s *mcpServers) host() *runtime.Host {
	if s.reg == nil {
		return nil
	}
	return s.reg.Host()
}

// stubs declares the servers' namespaces for the type checker, followed
// by more (a --stubs file).
func (s *mcpServers) stubs(more string) string {
	if s.reg == nil {
		return more
	}
	return strings.TrimRight(s.reg.Stubs(), "\n") + "\n\n" + more
}

// stopWait is how long a stdio server may take to exit once its stdin is
// closed, and then once sent SIGTERM, before it is sent SIGTERM, then
// SIGKILL. Some servers (the reference "everything" server) never exit on
// their own; the command's exit waits for this.
const stopWait = time.Second

// Close ends the sessions with the servers, all at once: each stdio
// server's stdin is closed, and a server that does not exit within
// stopWait is sent SIGTERM, then SIGKILL.
func (s *mcpServers) Close() {
	if s == nil {
		return
	}
	var wg sync.WaitGroup
	for _, ns := range s.namespaces {
		wg.Go(func() { _ = ns.Close() })
	}
	wg.Wait()
}

// headerTransport adds the --connect-header headers to every request.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

// RoundTrip sends req with the headers.
func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			req.Header[k] = slices.Clone(vs)
		}
	}
	return t.next.RoundTrip(req)
}

// serverStderr takes a stdio server's stderr: each line is logged, and the
// last few are kept for the error when the server does not start.
type serverStderr struct {
	server string
	log    *slog.Logger

	mu      sync.Mutex
	partial []byte
	last    []string
}

// The most of a server's stderr that is kept: lines, and bytes of one line.
const (
	stderrLines    = 8
	stderrLineSize = 512
)

// Write logs the complete lines of p.
func (w *serverStderr) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		var line string
		switch i := slices.Index(w.partial, '\n'); {
		case i >= 0:
			line, w.partial = string(w.partial[:i]), w.partial[i+1:]
		case len(w.partial) >= 4*stderrLineSize: // a line too long: what came of it
			line, w.partial = string(w.partial), nil
		default:
			return len(p), nil
		}
		line = strings.TrimRight(line, "\r")
		if len(line) > stderrLineSize {
			line = line[:stderrLineSize] + "…"
		}
		w.log.Info("mcp server stderr", "server", w.server, "line", line)
		w.last = append(w.last, line)
		if len(w.last) > stderrLines {
			w.last = w.last[1:]
		}
	}
}

// tail is the last lines written, the partial one too.
func (w *serverStderr) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.last
	if len(w.partial) > 0 {
		lines = append(slices.Clone(lines), string(w.partial))
	}
	return strings.Join(lines, "\n")
}
