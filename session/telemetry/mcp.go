package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of MCP spans, after OpenTelemetry's semantic conventions for
// MCP.
const (
	AttrMCPMethod      = attribute.Key("mcp.method.name")
	AttrGenAITool      = attribute.Key("gen_ai.tool.name")
	AttrGenAIOperation = attribute.Key("gen_ai.operation.name")
	// AttrMCPServer is the namespace the code calls the server by.
	AttrMCPServer = attribute.Key("monty.mcp.server")
)

// StartMCPCall starts the client span of a tools/call of tool on the MCP
// server the code calls server, and writes the trace context into meta,
// the request's _meta, so that the server's spans join the trace. done
// ends the span with the call's failure (nil, or the error of a tool
// result marked isError) and records its duration.
func StartMCPCall(ctx context.Context, server, tool string, meta map[string]any) (context.Context, func(err error)) {
	t := FromContext(ctx)
	ctx, span := Start(ctx, "tools/call "+tool, trace.SpanKindClient,
		AttrMCPMethod.String("tools/call"), AttrGenAITool.String(tool), AttrGenAIOperation.String("execute_tool"), AttrMCPServer.String(server))
	if meta != nil {
		t.InjectMeta(ctx, meta)
	}
	start := time.Now()
	return ctx, func(err error) {
		attrs := []attribute.KeyValue{AttrMCPMethod.String("tools/call"), AttrGenAITool.String(tool), AttrMCPServer.String(server)}
		if err != nil {
			attrs = append(attrs, AttrErrorType.String("tool_error"))
			if span.IsRecording() {
				span.SetAttributes(AttrErrorType.String("tool_error"))
			}
		}
		t.mcpDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
		End(span, err)
	}
}

// StartMCPServer starts the server span of an MCP tools/call of tool that
// this process answers, as a child of the trace context in the request's
// _meta (meta, nil when it has none) or of the span already in ctx.
func (t *Telemetry) StartMCPServer(ctx context.Context, tool string, meta map[string]any) (context.Context, trace.Span) {
	t = t.Or()
	ctx = t.ExtractMeta(ctx, meta)
	return t.tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(AttrMCPMethod.String("tools/call"), AttrGenAITool.String(tool), AttrGenAIOperation.String("execute_tool")))
}
