// Package telemetry is how monty reports to OpenTelemetry: a span per
// execution with child spans for host calls, MCP tool calls, client-tool
// pauses and resumes, type checks and store operations, and a few metrics
// beside them (docs/telemetry.md lists every span, attribute and
// instrument).
//
// A *Telemetry holds the providers. The session, agent, HTTP and MCP
// packages take one in their options; nil means Default, which uses the
// global providers (otel.SetTracerProvider, otel.SetMeterProvider), so a
// program that never sets them pays for no-op spans only. Child spans are
// started only under a recording span: code that runs outside a traced
// execution creates none.
//
// This package imports only the OpenTelemetry API. Package otlpenv sets up
// the SDK and the OTLP exporters from the OTEL_* environment variables.
package telemetry

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of monty's tracer and meter.
const ScopeName = "github.com/monty-go/monty"

// Span names.
const (
	SpanExecute   = "monty.execute"
	SpanHostCall  = "monty.host_call"
	SpanTypeCheck = "monty.typecheck"
	SpanPause     = "monty.pause"
	SpanResume    = "monty.resume"
	// SpanApproval is a decision on a call that waited for a person's
	// approval, carried out: the approved call (its host call span is a
	// child), or the refusal. Its attributes are the AttrApproval* keys.
	SpanApproval = "monty.approval"
	// SpanSessionPrefix is followed by what a monty.v1 server does with a
	// stored session outside an execution: monty.session.load, .dump (a
	// record) and .park.
	SpanSessionPrefix = "monty.session."
	// SpanStorePrefix is followed by the operation: monty.store.get, .put,
	// .delete, .stat, .list.
	SpanStorePrefix = "monty.store."
)

// Attribute keys.
const (
	// AttrSessionID is the session's store id.
	AttrSessionID = attribute.Key("monty.session.id")
	// AttrOutcome is how an execution ended: one of the Outcome constants.
	AttrOutcome = attribute.Key("monty.outcome")
	// AttrLimit names the limit an execution ran into ("time_limit",
	// "memory_limit", "host_call_limit", ...: runtime.LimitKind's names,
	// the error codes of the service surfaces).
	AttrLimit = attribute.Key("monty.limit")
	// AttrExceptionType is the type of the Python exception that ended the
	// code.
	AttrExceptionType = attribute.Key("monty.exception.type")
	// AttrResumed marks the execution that continues a paused run.
	AttrResumed = attribute.Key("monty.resumed")
	// AttrRunID is the id of a paused run.
	AttrRunID = attribute.Key("monty.run.id")
	// AttrSaved tells whether the execution stored new state.
	AttrSaved = attribute.Key("monty.state.saved")
	// AttrStateSize is the size in bytes of the stored state.
	AttrStateSize = attribute.Key("monty.state.size")
	// AttrFunction is the name of a host function or host object method.
	AttrFunction = attribute.Key("monty.function")
	// AttrAsync marks a host call that ran as an async task.
	AttrAsync = attribute.Key("monty.async")
	// AttrMethod marks a host call of a host object's method (an MCP
	// tool's, say) rather than of a host function.
	AttrMethod = attribute.Key("monty.method")
	// AttrToolCalls is the number of client-tool calls a pause waits for,
	// or a resume answers.
	AttrToolCalls = attribute.Key("monty.tool_calls")
	// AttrTools names the client tools a pause waits for.
	AttrTools = attribute.Key("monty.tools")
	// AttrProblems is the number of problems a type check found.
	AttrProblems = attribute.Key("monty.typecheck.problems")
	// AttrStoreBackend names the store ("memory", "dir", "redis", "s3",
	// "tiered").
	AttrStoreBackend = attribute.Key("monty.store.backend")
	// AttrStoreOperation is get, put, delete, stat or list.
	AttrStoreOperation = attribute.Key("monty.store.operation")
	// AttrStoreSource is the backend that served a read (for the tiered
	// store "hot" or "archive").
	AttrStoreSource = attribute.Key("monty.store.source")
	// AttrStoreBytes is the size of the blob read or written.
	AttrStoreBytes = attribute.Key("monty.store.bytes")
	// AttrStoreEntries is the number of entries a List returned.
	AttrStoreEntries = attribute.Key("monty.store.entries")
	// AttrStoreFound is false when a read found nothing under the id.
	AttrStoreFound = attribute.Key("monty.store.found")
	// AttrLinkKind says what a link of an execution's span points to:
	// "paused_run", the execution that paused the run it resumes.
	AttrLinkKind = attribute.Key("monty.link")
	// AttrClaimed marks a resume that claimed its paused run in the store
	// before making the run's approved calls.
	AttrClaimed = attribute.Key("monty.run.claimed")
	// AttrApprovalWho is who decided an approval call: an API key's name
	// (or its namespace, never the key), an MCP client's name.
	AttrApprovalWho = attribute.Key("monty.approval.who")
	// AttrApprovalTool is the tool as the code calls it.
	AttrApprovalTool = attribute.Key("monty.approval.tool")
	// AttrApprovalCallID is the call's id in its paused run.
	AttrApprovalCallID = attribute.Key("monty.approval.call_id")
	// AttrApprovalApproved is the decision.
	AttrApprovalApproved = attribute.Key("monty.approval.approved")
	// AttrApprovalOutcome is what came of it: "ok", "raised", "denied"
	// or "may_have_run" (session.Decision.Outcome).
	AttrApprovalOutcome = attribute.Key("monty.approval.outcome")
	// AttrApprovalKey is the call's idempotency key.
	AttrApprovalKey = attribute.Key("monty.approval.idempotency_key")
	// AttrErrorType classifies a failure (OpenTelemetry's error.type).
	AttrErrorType = attribute.Key("error.type")
)

// Options names the providers a Telemetry reports to. Its zero value
// means the global providers and W3C Trace Context.
type Options struct {
	// TracerProvider; nil means the global one (otel.GetTracerProvider).
	TracerProvider trace.TracerProvider
	// MeterProvider; nil means the global one (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
	// Propagator reads and writes trace context in HTTP headers and MCP
	// request metadata; nil means W3C Trace Context alone. (Baggage is
	// left out unless asked for: it would carry what a client sent on to
	// the MCP servers the code calls.)
	Propagator propagation.TextMapPropagator
}

// Telemetry reports monty's spans and metrics to the providers of its
// Options. It is safe for concurrent use.
type Telemetry struct {
	tp     trace.TracerProvider
	mp     metric.MeterProvider
	prop   propagation.TextMapPropagator
	tracer trace.Tracer

	execDuration  metric.Float64Histogram
	storeDuration metric.Float64Histogram
	checkDuration metric.Float64Histogram
	mcpDuration   metric.Float64Histogram
}

// New returns a Telemetry reporting to the providers opts names.
func New(opts Options) *Telemetry {
	t := &Telemetry{tp: opts.TracerProvider, mp: opts.MeterProvider, prop: opts.Propagator}
	if t.tp == nil {
		t.tp = otel.GetTracerProvider()
	}
	if t.mp == nil {
		t.mp = otel.GetMeterProvider()
	}
	if t.prop == nil {
		t.prop = propagation.TraceContext{}
	}
	t.tracer = t.tp.Tracer(ScopeName)
	meter := t.mp.Meter(ScopeName)
	t.execDuration = histogram(meter, "monty.execution.duration", "Duration of executions (runs and resumes), by outcome.")
	t.storeDuration = histogram(meter, "monty.store.operation.duration", "Duration of session store operations, by operation, backend and outcome.")
	t.checkDuration = histogram(meter, "monty.typecheck.duration", "Duration of type checks, by outcome.")
	t.mcpDuration = histogram(meter, "mcp.client.operation.duration", "Duration of MCP tool calls made by Python code, by tool and outcome.")
	return t
}

// secondBuckets are the bucket boundaries of the duration histograms, in
// seconds: a millisecond to a minute (OpenTelemetry's default boundaries
// are made for milliseconds).
var secondBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// histogram makes a float64 histogram in seconds. The API's instruments
// never fail for a valid name; a provider that does fail returns a no-op
// instrument with its error, which is the right fallback here.
func histogram(m metric.Meter, name, desc string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(secondBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	return h
}

var defaultTelemetry = sync.OnceValue(func() *Telemetry { return New(Options{}) })

// Default is the Telemetry of the global providers. It follows them: spans
// and metrics go wherever otel.SetTracerProvider and otel.SetMeterProvider
// point, even when they are called after Default.
func Default() *Telemetry { return defaultTelemetry() }

// Or returns t, or Default when t is nil: what the options structs do
// with their Telemetry field.
func (t *Telemetry) Or() *Telemetry {
	if t == nil {
		return Default()
	}
	return t
}

// TracerProvider is the provider spans go to.
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.Or().tp }

// MeterProvider is the provider metrics go to.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.Or().mp }

// Propagator reads and writes trace context.
func (t *Telemetry) Propagator() propagation.TextMapPropagator { return t.Or().prop }

// Tracer is monty's tracer.
func (t *Telemetry) Tracer() trace.Tracer { return t.Or().tracer }

type contextKey struct{}

// withTelemetry returns ctx carrying t, for the packages below an
// execution (store, MCP) to find its meter.
func withTelemetry(ctx context.Context, t *Telemetry) context.Context {
	return context.WithValue(ctx, contextKey{}, t)
}

// FromContext returns the Telemetry of the execution ctx belongs to, or
// Default.
func FromContext(ctx context.Context) *Telemetry {
	if t, ok := ctx.Value(contextKey{}).(*Telemetry); ok {
		return t
	}
	return Default()
}

// Recording reports whether the span in ctx records: child spans are only
// started under one.
func Recording(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// noSpan does nothing: what Start returns when there is nothing to record.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts a child span of the span in ctx, with that span's provider,
// when that span is recording. Otherwise it returns ctx and a span that
// does nothing, so that callers end it unconditionally.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noSpan
	}
	return parent.TracerProvider().Tracer(ScopeName).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with err's text when err is not nil.
func End(span trace.Span, err error) {
	Fail(span, err)
	span.End()
}

// Fail marks span failed with err's text (its first MaxDescription
// bytes), when err is not nil.
func Fail(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, Clip(err.Error()))
	}
}

// MaxDescription bounds the text monty puts in a span's status or in an
// attribute taken from what the code did (an exception's type, a tool's
// error): an MCP server's error text may be megabytes.
const MaxDescription = 256

// Clip returns the first MaxDescription bytes of s (valid UTF-8, marked
// with an ellipsis when cut).
func Clip(s string) string {
	if len(s) <= MaxDescription {
		return s
	}
	return strings.ToValidUTF8(s[:MaxDescription], "") + "…"
}
