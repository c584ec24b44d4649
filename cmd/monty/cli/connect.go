package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

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
	if len(c.connects) > 0 {
		if err := leftOut("--connect"); err != nil {
			return nil, err
		}
	}
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
