package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Outcomes of an execution (AttrOutcome), the same words as the outcome
// label of GET /metrics' monty_executions_total, and cancelled.
const (
	OutcomeOK        = "ok"         // the code ran to its end
	OutcomeException = "exception"  // the code raised
	OutcomeLimit     = "limit"      // the code ran into a limit (AttrLimit says which)
	OutcomePaused    = "paused"     // the run stopped at client tool calls
	OutcomeTypeError = "type_error" // a type check refused the code; nothing ran
	OutcomeCancelled = "cancelled"  // the caller gave up
	OutcomeError     = "error"      // the call failed: store, conflict, dead interpreter
)

// outcomeSets are the metric attributes of each outcome, made once.
var outcomeSets = func() map[string]attribute.Set {
	m := map[string]attribute.Set{}
	for _, o := range []string{OutcomeOK, OutcomeException, OutcomeLimit, OutcomePaused, OutcomeTypeError, OutcomeCancelled, OutcomeError} {
		m[o] = attribute.NewSet(AttrOutcome.String(o))
	}
	return m
}()

func outcomeSet(o string) attribute.Set {
	if s, ok := outcomeSets[o]; ok {
		return s
	}
	return attribute.NewSet(AttrOutcome.String(o))
}

// Execution is the span and timing of one execution, from
// StartExecution to End. It belongs to the call running the execution:
// End it once, from there.
type Execution struct {
	ctx   context.Context
	t     *Telemetry
	span  trace.Span
	start time.Time
}

// StartExecution starts the span of an execution in session sessionID
// (a resumed one continues a paused run). The returned context carries the
// span, under which host calls, type checks and store operations start
// theirs, and t, for their metrics.
func (t *Telemetry) StartExecution(ctx context.Context, sessionID string, resumed bool) (context.Context, Execution) {
	t = t.Or()
	ctx, span := t.tracer.Start(withTelemetry(ctx, t), SpanExecute)
	if span.IsRecording() {
		span.SetAttributes(AttrSessionID.String(sessionID), AttrResumed.Bool(resumed))
	}
	return ctx, Execution{ctx: ctx, t: t, span: span, start: time.Now()}
}

// Outcome is how an execution ended.
type Outcome struct {
	// Kind is one of the Outcome constants.
	Kind string
	// Limit names the limit hit (OutcomeLimit).
	Limit string
	// ExceptionType is the Python exception's type (OutcomeException,
	// OutcomeLimit).
	ExceptionType string
	// Err is the failure (OutcomeError, OutcomeCancelled, OutcomeTypeError).
	Err error
	// Saved and StateSize describe the stored state after the call.
	Saved     bool
	StateSize int64
	// RunID is the paused run (OutcomePaused) or the resumed one.
	RunID string
}

// End ends the execution's span with o and records its duration.
func (e Execution) End(o Outcome) {
	if e.t == nil {
		return
	}
	e.t.execDuration.Record(e.ctx, time.Since(e.start).Seconds(), metric.WithAttributeSet(outcomeSet(o.Kind)))
	if !e.span.IsRecording() {
		e.span.End()
		return
	}
	attrs := []attribute.KeyValue{AttrOutcome.String(o.Kind), AttrSaved.Bool(o.Saved)}
	if o.StateSize > 0 {
		attrs = append(attrs, AttrStateSize.Int64(o.StateSize))
	}
	if o.Limit != "" {
		attrs = append(attrs, AttrLimit.String(o.Limit))
	}
	if o.ExceptionType != "" {
		attrs = append(attrs, AttrExceptionType.String(Clip(o.ExceptionType)))
	}
	if o.RunID != "" {
		attrs = append(attrs, AttrRunID.String(o.RunID))
	}
	switch o.Kind {
	case OutcomeOK, OutcomePaused:
	default:
		errType := o.ExceptionType
		if errType == "" {
			errType = o.Kind
		}
		attrs = append(attrs, AttrErrorType.String(Clip(errType)))
		msg := o.Kind
		if o.Err != nil {
			msg = Clip(o.Err.Error())
		}
		e.span.SetStatus(codes.Error, msg)
	}
	e.span.SetAttributes(attrs...)
	e.span.End()
}

// StartTypeCheck starts the span of a type check under ctx's span; done
// ends it with the number of problems found (or the check's failure) and
// records its duration.
func (t *Telemetry) StartTypeCheck(ctx context.Context) (done func(problems int, err error)) {
	t = t.Or()
	_, span := Start(ctx, SpanTypeCheck, trace.SpanKindInternal)
	start := time.Now()
	return func(problems int, err error) {
		outcome := "clean"
		switch {
		case err != nil:
			outcome = "error"
		case problems > 0:
			outcome = "problems"
		}
		t.checkDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(AttrOutcome.String(outcome)))
		if span.IsRecording() {
			span.SetAttributes(AttrProblems.Int(problems), AttrOutcome.String(outcome))
		}
		End(span, err)
	}
}

// Traceparent is the W3C traceparent of the span in ctx when it records,
// or "": what a paused run keeps, for its resume to link to.
func Traceparent(ctx context.Context) string {
	if !Recording(ctx) {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// Link links the execution's span to the span traceparent names (that of
// the execution that paused the run this one resumes); an empty or
// malformed traceparent links nothing.
func (e Execution) Link(traceparent string) {
	if traceparent == "" || e.span == nil || !e.span.IsRecording() {
		return
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		e.span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{AttrLinkKind.String("paused_run")}})
	}
}
