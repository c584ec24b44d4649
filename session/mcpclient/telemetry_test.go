package mcpclient_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/tools"
)

// metaRecorder is a tool "whoami" of the demo server that records the
// _meta of each call it gets.
type metaRecorder struct {
	mu    sync.Mutex
	metas []map[string]any
}

func (m *metaRecorder) add(d *demoServer) {
	d.srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.mu.Lock()
			m.metas = append(m.metas, maps.Clone(req.Params.GetMeta()))
			m.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "me"}}}, nil
		})
}

func (m *metaRecorder) take() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	metas := m.metas
	m.metas = nil
	return metas
}

// spansNamed returns the recorded spans called name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// spanNames lists the recorded spans, for failure messages.
func spanNames(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		out = append(out, s.Name+" "+s.SpanContext.SpanID().String()+" <- "+s.Parent.SpanID().String())
	}
	return out
}

// newTracer is a tracer provider whose spans go to the exporter, shut
// down when the test ends.
func newTracer(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return exp, tp
}

// TestMCPTraceContext: each MCP call of a traced run is a client span
// "tools/call <tool>" under the host call's span, in the execution's
// trace, and the request's _meta carries its traceparent beside the keys
// the call sets itself (progress token, log level); a tool error ends
// the span failed; an untraced run sends no trace context.
func TestMCPTraceContext(t *testing.T) {
	exp, tp := newTracer(t)
	d := newDemoServer(t)
	var rec metaRecorder
	rec.add(d)
	reg, _ := demoNamespace(t, d, mcpclient.Server{})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, Session: session.Options{
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp})}})

	// ExecuteEvents: a call of a run with events carries a progress token.
	res, err := e.ExecuteEvents(context.Background(), "t", agenttest.CodeArgs("await demo.whoami()"), func(agent.Event) {})
	require.NoError(t, err)
	require.NoError(t, res.Err, res.Text)

	metas := rec.take()
	require.Len(t, metas, 1)
	meta := metas[0]
	assert.Equal(t, mcpclient.LogLevel, meta[mcp.MetaKeyLogLevel], "the log level is kept: %v", meta)
	assert.NotEmpty(t, meta["progressToken"], "the progress token is kept: %v", meta)
	traceparent, _ := meta["traceparent"].(string)
	parts := strings.Split(traceparent, "-")
	require.Len(t, parts, 4, "a W3C traceparent in _meta: %v", meta)
	assert.Equal(t, "00", parts[0])
	assert.Equal(t, "01", parts[3], "sampled")

	execs := spansNamed(exp, telemetry.SpanExecute)
	require.Len(t, execs, 1, "%v", spanNames(exp))
	exec := execs[0]
	clients := spansNamed(exp, "tools/call whoami")
	require.Len(t, clients, 1, "%v", spanNames(exp))
	client := clients[0]
	assert.Equal(t, trace.SpanKindClient, client.SpanKind)
	assert.Equal(t, exec.SpanContext.TraceID().String(), parts[1], "the server gets the execution's trace")
	assert.Equal(t, client.SpanContext.SpanID().String(), parts[2], "the server's parent is the client span")
	assert.Equal(t, codes.Unset, client.Status.Code)
	attrs := map[string]string{}
	for _, kv := range client.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, "tools/call", attrs[string(telemetry.AttrMCPMethod)])
	assert.Equal(t, "whoami", attrs[string(telemetry.AttrGenAITool)])
	assert.Equal(t, "demo", attrs[string(telemetry.AttrMCPServer)])

	// The client span is the child of the host call's, the child of the
	// execution's.
	hostCalls := spansNamed(exp, telemetry.SpanHostCall)
	require.Len(t, hostCalls, 1, "%v", spanNames(exp))
	assert.Equal(t, hostCalls[0].SpanContext.SpanID(), client.Parent.SpanID(), "tools/call under monty.host_call: %v", spanNames(exp))
	assert.Equal(t, exec.SpanContext.SpanID(), hostCalls[0].Parent.SpanID(), "monty.host_call under monty.execute: %v", spanNames(exp))

	// A result with isError raises in the code, and ends the span failed.
	exp.Reset()
	assert.Equal(t, "caught", agenttest.OK(t, e, "t", "try:\n    await demo.fail()\nexcept RuntimeError:\n    print('caught')"))
	fails := spansNamed(exp, "tools/call fail")
	require.Len(t, fails, 1, "%v", spanNames(exp))
	assert.Equal(t, codes.Error, fails[0].Status.Code)
	assert.Contains(t, fails[0].Status.Description, "the index is down")

	// So does a server that went away.
	exp.Reset()
	d.kill()
	res = agenttest.Execute(t, e, "t", "await demo.whoami()")
	assert.Contains(t, res.Text, "OSError")
	gone := spansNamed(exp, "tools/call whoami")
	require.Len(t, gone, 1, "%v", spanNames(exp))
	assert.Equal(t, codes.Error, gone[0].Status.Code)
	assert.Contains(t, gone[0].Status.Description, "went away")
	rec.take()

	// A run that is not traced sends no trace context.
	untraced := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, Session: session.Options{
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: noop.NewTracerProvider()})}})
	assert.Equal(t, "'me'", agenttest.OK(t, untraced, "t", "await demo.whoami()"))
	metas = rec.take()
	require.Len(t, metas, 1)
	assert.NotContains(t, metas[0], "traceparent")
	assert.Equal(t, mcpclient.LogLevel, metas[0][mcp.MetaKeyLogLevel])

	// Nor does it pass on the trace context its caller was sent (a
	// client's traceparent reaching the operator's MCP servers).
	remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true}))
	res, err = untraced.Execute(remote, "t", json.RawMessage(`{"code": "await demo.whoami()"}`))
	require.NoError(t, err)
	require.Empty(t, res.Error, res.Text)
	metas = rec.take()
	require.Len(t, metas, 1)
	assert.NotContains(t, metas[0], "traceparent")
}

// pyTraceServer is an MCP server of the official MCP Python SDK (mcp on
// PyPI, whose servers take the W3C trace context of each request's _meta
// as the parent of their span, SEP-414) over stdio, with the
// OpenTelemetry API only: the span it starts records nothing but carries
// its parent's trace and span ids, which its tool whereami returns.
const pyTraceServer = `
from mcp.server.mcpserver import MCPServer
from opentelemetry import trace

server = MCPServer("tracecheck")


@server.tool()
def whereami() -> str:
    """The trace and span ids of the current span."""
    sc = trace.get_current_span().get_span_context()
    return f"{sc.trace_id:032x}-{sc.span_id:016x}"


server.run()
`

// TestMCPTraceContextToPythonServer: a server of the official MCP Python
// SDK takes the trace context monty's call sends as the parent of its
// span: it sees the execution's trace and the client span. Needs
// MONTY_TEST_PYTHON (scripts/pyclients.sh).
func TestMCPTraceContextToPythonServer(t *testing.T) {
	py := mcptest.Python(t, "a server")
	script := filepath.Join(t.TempDir(), "trace_server.py")
	require.NoError(t, os.WriteFile(script, []byte(pyTraceServer), 0o644))
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "py", Transport: func() (mcp.Transport, error) {
		return &mcp.CommandTransport{Command: exec.Command(py, script)}, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, Session: session.Options{
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp})}})

	seen := agenttest.OK(t, e, "t", "print((await py.whereami())['result'])")
	client := spansNamed(exp, "tools/call whereami")
	require.Len(t, client, 1, "%v", spanNames(exp))
	execs := spansNamed(exp, telemetry.SpanExecute)
	require.Len(t, execs, 1, "%v", spanNames(exp))
	assert.Equal(t, execs[0].SpanContext.TraceID().String()+"-"+client[0].SpanContext.SpanID().String(), seen,
		"the Python server's span is in the execution's trace, under the client span")
}
