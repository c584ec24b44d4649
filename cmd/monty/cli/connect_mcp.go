//go:build !monty_lean

package cli

import (
	"cmp"
	"context"
	"errors"
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
