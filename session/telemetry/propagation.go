package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// MetaCarrier carries trace context in the _meta object of an MCP request
// (the go-sdk's mcp.Meta converts to it): the propagator's keys,
// "traceparent" and "tracestate" for W3C Trace Context, at the top level
// of _meta, as MCP's tracing convention puts them. Like the map it is, it
// is not safe for concurrent writes.
type MetaCarrier map[string]any

var _ propagation.TextMapCarrier = MetaCarrier(nil)

// Get returns the string under key, or "".
func (c MetaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

// Set sets key to value.
func (c MetaCarrier) Set(key, value string) { c[key] = value }

// Keys lists the keys whose values are strings.
func (c MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k, v := range c {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// ExtractMeta returns ctx with the trace context of an MCP request's
// _meta (nil: none).
func (t *Telemetry) ExtractMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return t.Propagator().Extract(ctx, MetaCarrier(meta))
}

// InjectMeta writes ctx's trace context into an MCP request's _meta when
// the span in ctx records: a process that traces nothing passes on no
// context a client sent it.
func (t *Telemetry) InjectMeta(ctx context.Context, meta map[string]any) {
	if Recording(ctx) {
		t.Propagator().Inject(ctx, MetaCarrier(meta))
	}
}

// ExtractHTTP returns ctx with the trace context of an HTTP request's
// headers (W3C traceparent by default).
func (t *Telemetry) ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	return t.Propagator().Extract(ctx, propagation.HeaderCarrier(h))
}
