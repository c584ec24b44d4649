package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/telemetry"
)

// tracedExecutor is an executor on a memory store whose spans go to the
// returned exporter.
func tracedExecutor(t *testing.T) (*agent.Executor, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st := memstore.New(memstore.Options{})
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{
		Keeper: keeper, Session: session.Options{
			Store:     st,
			Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp}),
		}})
	require.NoError(t, err)
	t.Cleanup(keeper.Close)
	return exec, exp
}

// tracedServer serves a tracedExecutor over MCP in memory, and returns a
// client session.
func tracedServer(t *testing.T) (*mcp.ClientSession, *tracetest.InMemoryExporter) {
	t.Helper()
	exec, exp := tracedExecutor(t)
	return connect(t, exec), exp
}

// callMeta makes a tools/call with _meta, and returns the result.
func callMeta(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	require.NoError(t, err)
	return res
}

// onlySpan returns the one recorded span called name.
func onlySpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q among %v", name, names)
	return found[0]
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestTraceContextFromMeta: the W3C trace context a client puts in a
// tools/call's _meta is the remote parent of the call's server span, under
// which the execution is traced; a tool error ends the span failed, and a
// malformed traceparent starts a new trace without failing the call.
func TestTraceContextFromMeta(t *testing.T) {
	cs, exp := tracedServer(t)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	meta := mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01", "tracestate": "congo=t61rcWkgMzE"}

	res := callMeta(t, cs, "execute_python", map[string]any{"code": "x = 41\nx + 1"}, meta)
	require.False(t, res.IsError, "%v", res.Content)
	server := onlySpan(t, exp, "tools/call execute_python")
	assert.Equal(t, trace.SpanKindServer, server.SpanKind)
	assert.Equal(t, traceID, server.SpanContext.TraceID().String())
	assert.Equal(t, parentID, server.Parent.SpanID().String())
	assert.True(t, server.Parent.IsRemote())
	assert.Equal(t, "congo=t61rcWkgMzE", server.SpanContext.TraceState().String())
	assert.Equal(t, codes.Unset, server.Status.Code)
	assert.Equal(t, "tools/call", attr(server, string(telemetry.AttrMCPMethod)))
	assert.Equal(t, "execute_python", attr(server, string(telemetry.AttrGenAITool)))
	exec := onlySpan(t, exp, telemetry.SpanExecute)
	assert.Equal(t, server.SpanContext.SpanID(), exec.Parent.SpanID(), "monty.execute under the server span")
	assert.Equal(t, traceID, exec.SpanContext.TraceID().String())

	// Code that raises is a tool error: the span ends failed.
	exp.Reset()
	res = callMeta(t, cs, "execute_python", map[string]any{"code": "1 / 0"}, meta)
	require.True(t, res.IsError)
	server = onlySpan(t, exp, "tools/call execute_python")
	assert.Equal(t, codes.Error, server.Status.Code)
	assert.Equal(t, "ZeroDivisionError", server.Status.Description)
	assert.Equal(t, "tool_error", attr(server, string(telemetry.AttrErrorType)))

	// So are bad arguments of resume_python.
	exp.Reset()
	res = callMeta(t, cs, "resume_python", map[string]any{"run_id": "nope", "results": []any{}}, meta)
	require.True(t, res.IsError)
	server = onlySpan(t, exp, "tools/call resume_python")
	assert.Equal(t, traceID, server.SpanContext.TraceID().String())
	assert.Equal(t, codes.Error, server.Status.Code)
	assert.NotEmpty(t, server.Status.Description)

	// reset_session is traced too.
	exp.Reset()
	res = callMeta(t, cs, "reset_session", map[string]any{}, meta)
	require.False(t, res.IsError, "%v", res.Content)
	server = onlySpan(t, exp, "tools/call reset_session")
	assert.Equal(t, traceID, server.SpanContext.TraceID().String())
	assert.Equal(t, parentID, server.Parent.SpanID().String())
	assert.Equal(t, codes.Unset, server.Status.Code)

	// A malformed traceparent, or none, starts a new trace; the call runs.
	for _, meta := range []mcp.Meta{{"traceparent": "00-xyz-01"}, {"traceparent": 42}, nil} {
		exp.Reset()
		res = callMeta(t, cs, "execute_python", map[string]any{"code": "6 * 7"}, meta)
		require.False(t, res.IsError, "%v", res.Content)
		assert.Equal(t, "42", res.Content[0].(*mcp.TextContent).Text)
		server = onlySpan(t, exp, "tools/call execute_python")
		assert.False(t, server.Parent.IsValid(), "%v: a root span", meta)
		assert.True(t, server.SpanContext.IsValid())
		assert.NotEqual(t, traceID, server.SpanContext.TraceID().String())
		exec := onlySpan(t, exp, telemetry.SpanExecute)
		assert.Equal(t, server.SpanContext.SpanID(), exec.Parent.SpanID())
	}
}
