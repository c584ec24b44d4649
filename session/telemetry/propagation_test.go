package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/session/telemetry"
)

// TestInjectMeta: a recording span's context goes into _meta, beside what
// is there, and baggage does not unless the propagator asks for it; a
// context that only carries what a client sent is not passed on, nor kept
// for a resume.
func TestInjectMeta(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tel := telemetry.New(telemetry.Options{TracerProvider: tp})
	member, _ := baggage.NewMember("secret", "abc")
	bag, _ := baggage.New(member)
	ctx := baggage.ContextWithBaggage(context.Background(), bag)

	ctx, span := tel.Tracer().Start(ctx, "run")
	defer span.End()
	meta := map[string]any{"progressToken": "p"}
	tel.InjectMeta(ctx, meta)
	assert.Equal(t, "p", meta["progressToken"])
	assert.Contains(t, meta["traceparent"], span.SpanContext().TraceID().String())
	assert.NotContains(t, meta, "baggage")
	assert.Equal(t, meta["traceparent"], telemetry.Traceparent(ctx))

	remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true}))
	meta = map[string]any{}
	tel.InjectMeta(remote, meta)
	assert.Empty(t, meta)
	assert.Empty(t, telemetry.Traceparent(remote))

	// Extraction reads what the convention puts at the top level of _meta
	// and ignores values that are not strings.
	got := trace.SpanContextFromContext(tel.ExtractMeta(context.Background(), map[string]any{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}))
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", got.TraceID().String())
	assert.False(t, trace.SpanContextFromContext(tel.ExtractMeta(context.Background(), map[string]any{"traceparent": 42})).IsValid())
}
