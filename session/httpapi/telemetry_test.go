package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/telemetry/scrape"
)

// TestTraceparent: a request's W3C traceparent is the parent of its server
// span, under which the execution and its store operations are traced;
// GET /metrics still answers, and a malformed traceparent starts a new
// trace without failing the request.
func TestTraceparent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	reader, metrics, err := scrape.New()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	s := newServer(t, httpapi.Options{Session: session.Options{Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})}, Metrics: metrics})
	c := s.client("")

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	status, _, body := c.do("POST", "/exec", []byte(`{"code": "x = 41\nx + 1", "session_id": "tp"}`),
		"traceparent", "00-"+traceID+"-"+parentID+"-01")
	require.Equal(t, http.StatusOK, status, string(body))

	spans := map[string]tracetest.SpanStub{}
	for _, sp := range exp.GetSpans() {
		spans[sp.Name] = sp
	}
	server, ok := spans["POST /exec"]
	require.True(t, ok, "a server span named after the route: %v", names(exp))
	assert.Equal(t, trace.SpanKindServer, server.SpanKind)
	assert.Equal(t, traceID, server.SpanContext.TraceID().String())
	assert.Equal(t, parentID, server.Parent.SpanID().String())
	assert.True(t, server.Parent.IsRemote())
	assert.Equal(t, "/exec", attrOf(server, "http.route"))

	exec, ok := spans[telemetry.SpanExecute]
	require.True(t, ok, "an execution span: %v", names(exp))
	assert.Equal(t, server.SpanContext.SpanID(), exec.Parent.SpanID())
	assert.Equal(t, traceID, exec.SpanContext.TraceID().String())
	get, ok := spans[telemetry.SpanStorePrefix+"get"]
	require.True(t, ok, "opening the session reads the store: %v", names(exp))
	assert.Equal(t, server.SpanContext.SpanID(), get.Parent.SpanID())
	put, ok := spans[telemetry.SpanStorePrefix+"put"]
	require.True(t, ok, "the state is written: %v", names(exp))
	assert.Equal(t, exec.SpanContext.SpanID(), put.Parent.SpanID())

	exp.Reset()
	status, _, body = c.do("POST", "/exec", []byte(`{"code": "1"}`), "traceparent", "00-not-a-trace-01")
	require.Equal(t, http.StatusOK, status, string(body))
	for _, sp := range exp.GetSpans() {
		if sp.Name == "POST /exec" {
			assert.False(t, sp.Parent.IsValid(), "a malformed traceparent is ignored")
		}
	}

	// A check without a session is a type check span under the request's.
	exp.Reset()
	status, _, body = c.do("POST", "/check", []byte(`{"code": "len(1)"}`))
	require.Equal(t, http.StatusOK, status, string(body))
	checks := map[string]tracetest.SpanStub{}
	for _, sp := range exp.GetSpans() {
		checks[sp.Name] = sp
	}
	require.Contains(t, checks, telemetry.SpanTypeCheck, names(exp))
	assert.Equal(t, checks["POST /check"].SpanContext.SpanID(), checks[telemetry.SpanTypeCheck].Parent.SpanID())
	assert.Equal(t, "1", attrOf(checks[telemetry.SpanTypeCheck], string(telemetry.AttrProblems)))

	exp.Reset()
	status, _, body = c.do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `monty_executions_total{outcome="ok"} 2`)
	status, _, _ = c.do("GET", "/healthz", nil)
	require.Equal(t, http.StatusOK, status)
	status, _, _ = c.do("HEAD", "/health", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, names(exp), "probes and scrapes are not traced")
}

// TestMetricsGoWhereTheyAreGiven: with a Telemetry of its own and no
// Metrics, the server serves no metrics (they go to that MeterProvider),
// and says so.
func TestMetricsGoWhereTheyAreGiven(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Telemetry: telemetry.New(telemetry.Options{})}}).client("")
	status, _, body := c.do("GET", "/metrics", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), "metrics_not_served")
}

func names(exp *tracetest.InMemoryExporter) string {
	var out []string
	for _, sp := range exp.GetSpans() {
		out = append(out, sp.Name)
	}
	return strings.Join(out, ", ")
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
