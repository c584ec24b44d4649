package mcpclient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/tools"
)

// Server is an MCP server whose tools Python code calls as the async
// methods of a namespace object: a server added as "github" with a tool
// search_issues is called as `await github.search_issues(query="…")`,
// and asyncio.gather runs several calls at once. See
// Add.
type Server struct {
	// Name is the namespace the code uses: a Python identifier that does
	// not start with "_" and is not the name of a function, class or
	// global of the registry.
	Name string
	// Transport returns a new transport to the server (an
	// *mcp.CommandTransport for a stdio server, an
	// *mcp.StreamableClientTransport for an HTTP one). It is called to
	// connect, and again to reconnect after the server went away: a
	// transport is used once.
	Transport func() (mcp.Transport, error)
	// Allow, when not empty, lists the tools offered; Deny lists tools
	// not offered. A tool in both is not offered. In Allow, Deny and
	// Approve a tool is named by its MCP name (get-sum) or its Python
	// name (get_sum, as the code calls it): a name means every tool it is
	// either name of. A name that is no tool of the server fails Add
	// (ErrUnknownTool).
	Allow, Deny []string
	// Approve lists tools whose calls wait for a person's approval (and
	// gates them whenever tools/list_changed lists them again, under
	// either name), as do the tools whose annotations say
	// destructiveHint (and not readOnlyHint): the code's call does not
	// run; the run pauses, is stored like a run paused at client tools
	// (resumable in any process, until its TTL), and the pause lists the
	// call as an approval. agent.Approve answers it: approved, the real
	// MCP call is made and its result is the call's value; refused, the
	// call raises PermissionError in the code.
	Approve []string
	// Logger receives the server's log notifications and the connection's
	// events; nil logs nothing.
	Logger *slog.Logger
}

// ErrServer matches errors of Add: the server cannot be
// reached, or its tools cannot be offered to Python.
var ErrServer = errors.New("mcpclient: MCP server")

// Namespace is an MCP server offered to Python by Add.
// It keeps one client session to the server, opened again when the
// server went away, and follows the server's tools/list_changed
// notifications. It is safe for concurrent use.
type Namespace struct {
	srv Server
	reg *tools.Registry
	log *slog.Logger

	// listing serialises listing the tools and offering them: a
	// tools/list_changed that arrives while Add lists them waits
	// and lists them again.
	listing sync.Mutex

	mu      sync.Mutex
	session *mcp.ClientSession // nil: not connected
	tools   map[string]mcpTool // by Python name
	closed  bool

	calls    atomic.Uint64 // numbers the progress tokens
	progress sync.Map      // progress token → func(*mcp.ProgressNotificationParams), for the calls under way
	logs     sync.Map      // progress token → func(level, message string), for the calls under way
}

// mcpTool is one tool of a namespace: its MCP definition and how its
// Python parameter names map to the tool's argument names.
type mcpTool struct {
	def  *mcp.Tool
	args map[string]string // Python parameter name → JSON property name
}

// Add connects to srv, lists its tools and offers them to
// Python as the async methods of a namespace object, the global
// srv.Name, in hosts made from now on. Each tool's inputSchema gives the
// method's parameters, in the schema's order, required ones first; a tool
// or parameter name that is not a Python identifier is mapped to one by
// PythonName, and two names mapping to the same one are refused. Calls
// are host calls: MaxCalls, MaxCallTime and the run's time limit apply,
// and a cancelled run cancels the MCP request. What a call returns:
//
//   - the result's structuredContent, as Python values (dicts, lists,
//     str, int, float, bool, None), when it has one;
//   - else the text of a result whose content is one text item, as a str;
//   - else a list with an item per content block: a str for text, and a
//     dict for others: {"type": "image" | "audio", "mime_type", "data"
//     (bytes)}, {"type": "resource_link", "uri", "name", "mime_type"},
//     {"type": "resource", "uri", "mime_type", "text" | "blob" (bytes)};
//   - None for a result with no content.
//
// The server's progress notifications for a call go to the run's
// tools.Observer (agent's events make them agent.ToolCallProgress), and
// its log messages (LogLevel and above) while calls are under way to the
// Observer of each such call (agent.ToolCallLog).
//
// Each call made in a traced run is a client span "tools/call <tool>"
// under the host call's span (package telemetry), and the request's _meta
// carries its W3C trace context (traceparent, tracestate), so that a
// server that follows MCP's tracing convention puts its spans in the
// run's trace. A call that raises ends the span failed.
//
// A result with isError raises RuntimeError with the server's text. A
// server that cannot be reached raises OSError (Monty has no
// ConnectionError, its subclass in CPython), and the next call connects
// again.
//
// Add fails with an error matching ErrServer when the server
// cannot be reached or its tools cannot be mapped, with
// *UnknownToolError (matching ErrUnknownTool and ErrServer) for each name
// of Allow, Deny and Approve that is no tool of the server, and with
// tools.ErrInvalidFunction when the name is taken. After a
// tools/list_changed, a name that no longer names a tool is logged as a
// warning, and the namespace goes on. Close the namespace to end the
// session.
func Add(ctx context.Context, r *tools.Registry, srv Server) (*Namespace, error) {
	if !tools.IsIdentifier(srv.Name) || strings.HasPrefix(srv.Name, "_") {
		return nil, fmt.Errorf("%w: MCP server name %q is not a Python identifier that does not start with _", tools.ErrInvalidFunction, srv.Name)
	}
	if srv.Transport == nil {
		return nil, fmt.Errorf("%w: MCP server %s has no Transport", tools.ErrInvalidFunction, srv.Name)
	}
	if r.Taken(srv.Name) { // checked again when the namespace is added
		return nil, fmt.Errorf("%w: the name %s is already taken", tools.ErrInvalidFunction, srv.Name)
	}
	// The lists are the namespace's own: a caller changing its slices
	// afterwards changes no gate.
	srv.Allow, srv.Deny, srv.Approve = slices.Clone(srv.Allow), slices.Clone(srv.Deny), slices.Clone(srv.Approve)
	ns := &Namespace{srv: srv, reg: r, log: srv.Logger}
	if ns.log == nil {
		ns.log = slog.New(slog.DiscardHandler)
	}
	cs, err := ns.offer(ctx)
	if err != nil {
		if cs != nil {
			// Closed without the listing lock: closing waits for the
			// session's handlers, and a tools/list_changed refresh may be
			// waiting for that lock.
			_ = cs.Close()
		}
		return nil, err
	}
	return ns, nil
}

// offer connects, lists the tools and offers them to Python, holding the
// listing lock. On an error it returns the session it opened, if any, for
// the caller to close once the lock is released.
func (ns *Namespace) offer(ctx context.Context) (*mcp.ClientSession, error) {
	ns.listing.Lock()
	defer ns.listing.Unlock()
	cs, err := ns.connect(ctx)
	if err != nil {
		return nil, err
	}
	defs, err := ns.list(ctx, cs)
	if err != nil {
		return cs, err
	}
	if unknown := ns.unknownNames(defs); len(unknown) > 0 {
		errs := make([]error, len(unknown))
		for i, u := range unknown {
			errs[i] = u
		}
		return cs, errors.Join(errs...)
	}
	class, offered, err := ns.describe(cs, defs)
	if err != nil {
		return cs, err
	}
	ns.mu.Lock()
	ns.session, ns.tools = cs, offered
	ns.mu.Unlock()
	return cs, ns.reg.AddNamespace(ns.srv.Name, class, ns)
}

// Close ends the session with the server; calls made afterwards raise
// OSError.
func (ns *Namespace) Close() error {
	ns.mu.Lock()
	ns.closed = true
	cs := ns.session
	ns.session = nil
	ns.mu.Unlock()
	if cs == nil {
		return nil
	}
	// Closed without the lock: closing waits for the session's handlers,
	// and a tools/list_changed refresh may be waiting for the lock.
	return cs.Close()
}

// Name is the namespace's name.
func (ns *Namespace) Name() string { return ns.srv.Name }

// Tools returns the Python names of the tools the namespace offers now,
// sorted.
func (ns *Namespace) Tools() []string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return slices.Sorted(maps.Keys(ns.tools))
}

// connect opens a client session.
func (ns *Namespace) connect(ctx context.Context) (*mcp.ClientSession, error) {
	t, err := ns.srv.Transport()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrServer, ns.srv.Name, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "monty-go", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) { ns.refresh(ctx, req.Session) },
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			p := req.Params
			ns.log.Info("mcp server log", "server", ns.srv.Name, "level", p.Level, "logger", p.Logger, "data", p.Data)
			// A log message names no request: every call under way on
			// this server reports it.
			message := logText(p)
			ns.logs.Range(func(_, report any) bool {
				report.(func(string, string))(string(p.Level), message)
				return true
			})
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if report, ok := ns.progress.Load(fmt.Sprint(req.Params.ProgressToken)); ok {
				report.(func(*mcp.ProgressNotificationParams))(req.Params)
			}
		},
	})
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("%w %s: cannot connect: %w", ErrServer, ns.srv.Name, err)
	}
	if init := cs.InitializeResult(); init != nil && init.Capabilities != nil && init.Capabilities.Logging != nil && init.ProtocolVersion < "2026-07-28" {
		// Servers send no log messages until the client sets a level (from
		// protocol 2026-07-28 on, each request carries it instead).
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: LogLevel}); err != nil {
			ns.log.Warn("mcp server: setting the log level failed", "server", ns.srv.Name, "error", err)
		}
	}
	return cs, nil
}

// LogLevel is the least severe level of the log messages an MCP server
// is asked to send; they are logged, and reported to the runs whose calls
// are under way as ToolCallLog events.
const LogLevel = "info"

// logText is a log message's data as text: a string as it is, anything
// else as JSON, after the logger's name when there is one.
func logText(p *mcp.LoggingMessageParams) string {
	text, ok := p.Data.(string)
	if !ok {
		b, _ := json.Marshal(p.Data)
		text = string(b)
	}
	if p.Logger != "" {
		text = p.Logger + ": " + text
	}
	return text
}

// list lists the server's tools, all of them.
func (ns *Namespace) list(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var defs []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("%w %s: listing tools: %w", ErrServer, ns.srv.Name, err)
		}
		defs = append(defs, t)
	}
	return defs, nil
}

// describe makes the tools of defs that the filters offer the methods of
// the namespace's class.
func (ns *Namespace) describe(cs *mcp.ClientSession, defs []*mcp.Tool) (*tools.Class, map[string]mcpTool, error) {
	class := &tools.Class{Name: ns.srv.Name, Description: ns.description(cs)}
	byName := map[string]mcpTool{}
	origin := map[string]string{}
	for _, def := range defs {
		if !ns.offered(def.Name) {
			continue
		}
		name := tools.PythonName(def.Name)
		if other, taken := origin[name]; taken {
			return nil, nil, fmt.Errorf("%w %s: tools %q and %q are both %s in Python; leave one out with a filter", ErrServer, ns.srv.Name, other, def.Name, name)
		}
		origin[name] = def.Name
		fn, args, err := ns.method(name, def)
		if err != nil {
			return nil, nil, err
		}
		class.Methods = append(class.Methods, fn)
		byName[name] = mcpTool{def: def, args: args}
	}
	slices.SortFunc(class.Methods, func(a, b tools.Function) int { return strings.Compare(a.Name, b.Name) })
	return class, byName, nil
}

// description is the namespace class's docstring.
func (ns *Namespace) description(cs *mcp.ClientSession) string {
	d := fmt.Sprintf("The tools of the MCP server %s, as async methods: await %s.tool(name=value, ...).", ns.srv.Name, ns.srv.Name)
	if init := cs.InitializeResult(); init != nil && init.ServerInfo != nil {
		info := init.ServerInfo
		d += fmt.Sprintf("\nServer: %s %s.", cmp.Or(info.Title, info.Name), info.Version)
		if init.Instructions != "" {
			d += "\n" + init.Instructions
		}
	}
	return d
}

// offered reports whether the filters offer the tool called tool (its
// MCP name).
func (ns *Namespace) offered(tool string) bool {
	if len(ns.srv.Allow) > 0 && !namesAny(ns.srv.Allow, tool) {
		return false
	}
	return !namesAny(ns.srv.Deny, tool)
}

// method is the Python method of tool def, named name.
func (ns *Namespace) method(name string, def *mcp.Tool) (tools.Function, map[string]string, error) {
	params, args, err := schemaParams(def.InputSchema)
	if err != nil {
		return tools.Function{}, nil, fmt.Errorf("%w %s: tool %q: %w", ErrServer, ns.srv.Name, def.Name, err)
	}
	desc := def.Description
	if def.Title != "" && desc == "" {
		desc = def.Title
	}
	tool := def.Name
	approval := ns.needsApproval(def)
	fn := tools.Function{
		Schema: tools.Schema{Name: name, Description: desc, Params: params, ReturnType: returnTypeOfSchema(def.OutputSchema), ReturnSchema: rawSchema(def.OutputSchema)},
		Async:  true,
		Handler: func(ctx context.Context, a tools.Args) (object.Value, error) {
			return ns.call(ctx, tool, a)
		},
	}
	fn.Approval = approval
	return fn, args, nil
}

// needsApproval reports whether calls of def wait for a person's approval.
func (ns *Namespace) needsApproval(def *mcp.Tool) bool {
	if namesAny(ns.srv.Approve, def.Name) {
		return true
	}
	a := def.Annotations
	return a != nil && !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint
}

// call makes the MCP call of tool with the bound arguments a.
func (ns *Namespace) call(ctx context.Context, tool string, a tools.Args) (_ object.Value, err error) {
	cs, t, err := ns.sessionFor(ctx, tool)
	if err != nil {
		return nil, err
	}
	arguments := make(map[string]json.RawMessage, len(a))
	for name, v := range a {
		js, err := object.ToJSON(v)
		if err != nil {
			return nil, &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s.%s() argument '%s': %v", ns.srv.Name, tools.PythonName(tool), name, err)}
		}
		arguments[t.args[name]] = js
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: arguments, Meta: mcp.Meta{mcp.MetaKeyLogLevel: LogLevel}}
	if key := tools.IdempotencyKey(ctx); key != "" {
		// An approved call: the same key on every attempt at it.
		params.Meta[MetaIdempotencyKey] = key
	}
	if obs, callID := tools.ObserverFrom(ctx), tools.CallID(ctx); obs != nil && callID != "" {
		// The server's progress notifications for this call become the
		// run's progress events.
		// Unique in the namespace, whose maps every run using the
		// registry shares, whatever ids the run's Observer makes.
		token := fmt.Sprintf("%s#%d", callID, ns.calls.Add(1))
		params.Meta["progressToken"] = token
		ns.progress.Store(token, func(p *mcp.ProgressNotificationParams) { obs.CallProgress(callID, p.Progress, p.Total, p.Message) })
		ns.logs.Store(token, func(level, message string) { obs.CallLog(callID, level, message) })
		defer ns.progress.Delete(token)
		defer ns.logs.Delete(token)
	}
	// A client span of the call under the run's (the host call's), whose
	// trace context goes in _meta beside the keys set above, so that the
	// server's spans join the run's trace. It ends failed with whatever
	// the code gets as an exception: a tool error, a refusal, a lost
	// connection.
	ctx, done := telemetry.StartMCPCall(ctx, ns.srv.Name, tool, params.Meta)
	defer func() { done(err) }()
	return ns.send(ctx, cs, tool, params)
}

// send sends the tools/call of tool and makes its result the call's value
// or exception.
func (ns *Namespace) send(ctx context.Context, cs *mcp.ClientSession, tool string, params *mcp.CallToolParams) (object.Value, error) {
	res, err := cs.CallTool(ctx, params)
	var refused *jsonrpc.Error
	switch {
	case err == nil:
		return toolResult(ns.srv.Name, tool, res)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &refused):
		return nil, &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("the MCP server %s refused %s(): %s", ns.srv.Name, tool, refused.Message)}
	}
	// The connection failed: the server went away.
	ns.drop(cs)
	return nil, &runtime.Exception{Type: "OSError", Message: fmt.Sprintf(
		"the MCP server %s went away during %s(): %v; the next call connects again", ns.srv.Name, tool, err)}
}

// sessionFor returns the session to call tool on, connecting again when
// the last one went away.
func (ns *Namespace) sessionFor(ctx context.Context, tool string) (*mcp.ClientSession, mcpTool, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.closed {
		return nil, mcpTool{}, &runtime.Exception{Type: "OSError", Message: fmt.Sprintf("the MCP server %s is closed", ns.srv.Name)}
	}
	if ns.session == nil {
		cs, err := ns.connect(ctx)
		if err != nil {
			return nil, mcpTool{}, &runtime.Exception{Type: "OSError", Message: fmt.Sprintf(
				"the MCP server %s cannot be reached: %v", ns.srv.Name, errors.Unwrap(err))}
		}
		ns.session = cs
		ns.log.Info("mcp server reconnected", "server", ns.srv.Name)
	}
	t, ok := ns.tools[tools.PythonName(tool)]
	if !ok {
		return nil, mcpTool{}, &runtime.Exception{Type: "AttributeError", Message: fmt.Sprintf("the MCP server %s no longer has a tool %s", ns.srv.Name, tool)}
	}
	return ns.session, t, nil
}

// drop forgets cs, a session that went away.
func (ns *Namespace) drop(cs *mcp.ClientSession) {
	ns.mu.Lock()
	current := ns.session == cs
	if current {
		ns.session = nil
	}
	ns.mu.Unlock()
	if current {
		_ = cs.Close() // without the lock, as in Close
		ns.log.Warn("mcp server went away", "server", ns.srv.Name)
	}
}

// refresh lists the tools again after a tools/list_changed notification
// on cs, the namespace's session.
func (ns *Namespace) refresh(ctx context.Context, cs *mcp.ClientSession) {
	ns.listing.Lock()
	defer ns.listing.Unlock()
	ns.mu.Lock()
	current := ns.session == cs
	ns.mu.Unlock()
	if !current {
		// A session Add refused, or one closed or gone since: its
		// tools are offered by no namespace.
		return
	}
	defs, err := ns.list(ctx, cs)
	if err != nil {
		ns.log.Warn("mcp server: tools/list_changed, but the tools cannot be listed", "server", ns.srv.Name, "error", err)
		return
	}
	// A name that no longer names a tool stays listed (the tool may come
	// back, and is then gated or filtered again), but the operator is
	// told.
	for _, u := range ns.unknownNames(defs) {
		ns.log.Warn("mcp server: tools/list_changed, and a name of "+u.List+" is no longer a tool of the server",
			"server", ns.srv.Name, "list", u.List, "tool", clip(u.Name, maxShownName), "suggestions", u.Suggestions)
	}
	class, offered, err := ns.describe(cs, defs)
	if err != nil {
		ns.log.Warn("mcp server: tools/list_changed, but the tools cannot be offered", "server", ns.srv.Name, "error", err)
		return
	}
	ns.mu.Lock()
	ns.tools = offered
	ns.mu.Unlock()
	if err := ns.reg.ReplaceNamespace(ns.srv.Name, class, ns); err != nil {
		ns.log.Warn("mcp server: tools/list_changed, but the new tools cannot be offered", "server", ns.srv.Name, "error", err)
		return
	}
	ns.log.Info("mcp server tools changed", "server", ns.srv.Name, "tools", len(offered))
}

// toolResult is what a call returns for res (see Add).
func toolResult(server, tool string, res *mcp.CallToolResult) (object.Value, error) {
	if res.IsError {
		return nil, &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("%s.%s failed: %s", server, tools.PythonName(tool), contentText(res.Content))}
	}
	if res.StructuredContent != nil {
		js, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("%s.%s returned structured content that is not JSON: %v", server, tool, err)}
		}
		return object.FromJSON(js)
	}
	switch len(res.Content) {
	case 0:
		return object.None{}, nil
	case 1:
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			return object.Str(t.Text), nil
		}
	}
	out := make(object.List, len(res.Content))
	for i, c := range res.Content {
		out[i] = contentValue(c)
	}
	return out, nil
}

// contentValue is one content block as a Python value.
func contentValue(c mcp.Content) object.Value {
	d := func(pairs ...any) object.Dict {
		var out object.Dict
		for i := 0; i < len(pairs); i += 2 {
			var v object.Value
			switch x := pairs[i+1].(type) {
			case string:
				v = object.Str(x)
			case []byte:
				v = object.Bytes(x)
			}
			out = append(out, object.Pair{Key: object.Str(pairs[i].(string)), Value: v})
		}
		return out
	}
	switch c := c.(type) {
	case *mcp.TextContent:
		return object.Str(c.Text)
	case *mcp.ImageContent:
		return d("type", "image", "mime_type", c.MIMEType, "data", c.Data)
	case *mcp.AudioContent:
		return d("type", "audio", "mime_type", c.MIMEType, "data", c.Data)
	case *mcp.ResourceLink:
		return d("type", "resource_link", "uri", c.URI, "name", c.Name, "mime_type", c.MIMEType)
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return d("type", "resource")
		}
		if r.Blob != nil {
			return d("type", "resource", "uri", r.URI, "mime_type", r.MIMEType, "blob", r.Blob)
		}
		return d("type", "resource", "uri", r.URI, "mime_type", r.MIMEType, "text", r.Text)
	}
	return object.None{}
}

// contentText is the text of an error result.
func contentText(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, "\n")
}

// schemaParams are the parameters of a tool's input schema: its
// properties in the schema's order, required ones first, with their
// Python names and the map back to the property names.
func schemaParams(schema any) ([]tools.Param, map[string]string, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	names, props, err := orderedMembers(s.Properties)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema properties: %w", err)
	}
	var required, optional []tools.Param
	args := map[string]string{}
	for _, prop := range names {
		name := tools.PythonName(prop)
		if name == "self" {
			name = "self_"
		}
		if other, taken := args[name]; taken {
			return nil, nil, fmt.Errorf("arguments %q and %q are both %s in Python", other, prop, name)
		}
		args[name] = prop
		var p struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Title       string `json:"title"`
		}
		_ = json.Unmarshal(props[prop], &p)
		param := tools.Param{Name: name, Type: paramTypeOf(p.Type), Description: cmp.Or(p.Description, p.Title), Schema: props[prop]}
		if slices.Contains(s.Required, prop) {
			required = append(required, param)
		} else {
			param.Optional = true
			optional = append(optional, param)
		}
	}
	return append(required, optional...), args, nil
}

// paramTypeOf is the parameter type of a JSON schema "type": a single
// known type, else Any (a union, "null", absent).
func paramTypeOf(t any) tools.ParamType {
	s, _ := t.(string)
	switch pt := tools.ParamType(s); pt {
	case tools.String, tools.Integer, tools.Number, tools.Boolean, tools.Array, tools.Object:
		return pt
	}
	return tools.Any
}

// returnTypeOfSchema is the return type of a tool with output schema s:
// Object when it has one (MCP's structured content is an object), else
// Any (a str, a list of content, or None).
func returnTypeOfSchema(s any) tools.ParamType {
	if s == nil {
		return tools.Any
	}
	return tools.Object
}

// rawSchema is schema (an output schema as the SDK decoded it) as JSON,
// nil when there is none.
func rawSchema(schema any) json.RawMessage {
	if schema == nil {
		return nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	return raw
}

// orderedMembers returns the member names of a JSON object in order, and
// their values.
func orderedMembers(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, values, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := values[name]; !dup {
			names = append(names, name)
		}
		values[name] = v
	}
	return names, values, nil
}
