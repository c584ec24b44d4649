package agent

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/telemetry"
)

type deciderKey struct{}

// WithDecider returns ctx carrying who decides the approval calls a resume
// under it answers (Approve, Executor.Resume): a name for the audit of
// decisions (session.Decision.Who), such as an API key's name or "mcp
// client <name>". Never pass a secret: it is stored, logged and traced.
func WithDecider(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, deciderKey{}, who)
}

// DeciderFrom returns who ctx says decides (WithDecider), or "unknown".
func DeciderFrom(ctx context.Context) string {
	if who, _ := ctx.Value(deciderKey{}).(string); who != "" {
		return who
	}
	return "unknown"
}

type denialKey struct{}

// WithDenialReason returns ctx carrying why the calls a resume under it
// refuses were refused, as the PermissionError the code gets says it
// ("github.delete_repo was not approved: <reason>"); without one the
// reason is "a person refused the call". A server that refuses by policy
// (no person could be asked) says so here.
func WithDenialReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, denialKey{}, reason)
}

func denialReason(ctx context.Context) string {
	if r, _ := ctx.Value(denialKey{}).(string); r != "" {
		return r
	}
	return "a person refused the call"
}

// newDecision starts the record of a decision on call c (tool name) by
// the decider ctx names.
func newDecision(ctx context.Context, name string, c session.ToolCall, approve bool) session.Decision {
	return session.Decision{Who: DeciderFrom(ctx), RunID: c.RunID, CallID: c.ID, Tool: name, Args: telemetry.Clip(c.Text(name)),
		IdempotencyKey: c.IdempotencyKey, Approved: approve}
}

// startDecision starts the span of decision d.
func startDecision(ctx context.Context, d session.Decision) (context.Context, trace.Span) {
	return telemetry.Start(ctx, telemetry.SpanApproval, trace.SpanKindInternal,
		telemetry.AttrApprovalWho.String(telemetry.Clip(d.Who)), telemetry.AttrApprovalTool.String(telemetry.Clip(d.Tool)),
		telemetry.AttrRunID.String(d.RunID), telemetry.AttrApprovalCallID.String(d.CallID), telemetry.AttrApprovalApproved.Bool(d.Approved),
		telemetry.AttrApprovalKey.String(d.IdempotencyKey))
}

// report records decision d, carried out: its outcome on span, an
// ApprovalDecision event of the run ctx reports to, and a record in log
// (slog.Default when nil).
func report(ctx context.Context, log *slog.Logger, span trace.Span, d *session.Decision, err error) {
	d.Time = time.Now().UTC()
	span.SetAttributes(telemetry.AttrApprovalOutcome.String(d.Outcome))
	telemetry.End(span, err)
	if rec, _ := ctx.Value(recorderKey{}).(*recorder); rec != nil {
		rec.decision(d)
	}
	attrs := []slog.Attr{slog.String("who", d.Who), slog.String("tool", d.Tool), slog.String("run_id", d.RunID), slog.String("call_id", d.CallID),
		slog.String("args", d.Args), slog.String("idempotency_key", d.IdempotencyKey), slog.Bool("approved", d.Approved),
		slog.String("outcome", d.Outcome)}
	if d.Exception != "" {
		attrs = append(attrs, slog.String("exception", d.Exception))
	}
	if log == nil {
		log = slog.Default()
	}
	log.LogAttrs(ctx, slog.LevelInfo, "approval decision", attrs...)
}
