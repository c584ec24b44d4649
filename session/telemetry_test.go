package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/telemetry"
)

// traced is a Telemetry on an SDK tracer provider whose spans an in-memory
// exporter keeps, and a meter provider read by hand.
type traced struct {
	tel     *telemetry.Telemetry
	spans   *tracetest.InMemoryExporter
	metrics *sdkmetric.ManualReader
}

func newTraced(t *testing.T) traced {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return traced{tel: telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp}), spans: exp, metrics: reader}
}

// named returns the ended spans called name.
func (tr traced) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the one ended span called name.
func (tr traced) one(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	spans := tr.named(name)
	require.Len(t, spans, 1, "spans called %s", name)
	return spans[0]
}

// points returns the data points of the histogram called name, by the
// value of the attribute key.
func (tr traced) points(t *testing.T, name string, key attribute.Key) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tr.metrics.Collect(context.Background(), &rm))
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				v, _ := dp.Attributes.Value(key)
				out[v.AsString()] += dp.Count
			}
		}
	}
	return out
}

func attrOf(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func childOf(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	assert.Equal(t, parent.SpanContext.TraceID(), child.SpanContext.TraceID(), "%s is in the trace of %s", child.Name, parent.Name)
	assert.Equal(t, parent.SpanContext.SpanID(), child.Parent.SpanID(), "%s is a child of %s", child.Name, parent.Name)
}

// TestTelemetrySpanTree: a run calling host functions and storing its
// state makes one execution span, a child span per host call (a failed
// one marked so) and one for the store write, and the metrics beside.
func TestTelemetrySpanTree(t *testing.T) {
	tr := newTraced(t)
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"double": {Func: func(ctx context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
			assert.True(t, trace.SpanFromContext(ctx).IsRecording(), "a host function runs under its call's span")
			return object.Int(2 * args[0].(object.Int)), nil
		}},
		"boom": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			panic("a host function's bug")
		}},
		"fail": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			// A hostile message is not copied whole into the span.
			return nil, &runtime.Exception{Type: "ValueError", Message: strings.Repeat("no", 1<<19)}
		}},
	}}
	s := open(t, "traced", session.Options{Store: memstore.New(memstore.Options{}), Host: host, Telemetry: tr.tel})
	tr.spans.Reset() // Open read the store before any execution: no span

	res, err := s.Exec(context.Background(), "x = double(2) + double(3)\ntry:\n    fail()\nexcept ValueError:\n    pass\ntry:\n    boom()\nexcept Exception:\n    pass\nx")
	require.NoError(t, err)
	require.Equal(t, object.Int(10), res.Value)

	exec := tr.one(t, telemetry.SpanExecute)
	assert.False(t, exec.Parent.IsValid(), "the execution is the root here")
	assert.Equal(t, "traced", attrOf(exec, telemetry.AttrSessionID).AsString())
	assert.Equal(t, telemetry.OutcomeOK, attrOf(exec, telemetry.AttrOutcome).AsString())
	assert.True(t, attrOf(exec, telemetry.AttrSaved).AsBool())
	assert.Equal(t, res.StateSize, attrOf(exec, telemetry.AttrStateSize).AsInt64())
	assert.Equal(t, codes.Unset, exec.Status.Code)

	calls := tr.named(telemetry.SpanHostCall)
	require.Len(t, calls, 4, "every call's span ends, a panicking one's too")
	failed := 0
	for _, c := range calls {
		childOf(t, c, exec)
		switch attrOf(c, telemetry.AttrFunction).AsString() {
		case "boom":
			assert.Equal(t, codes.Error, c.Status.Code)
			assert.Contains(t, c.Status.Description, "panicked")
			continue
		case "fail":
			failed++
			assert.Equal(t, codes.Error, c.Status.Code)
			assert.Equal(t, "ValueError", attrOf(c, telemetry.AttrExceptionType).AsString())
			assert.LessOrEqual(t, len(c.Status.Description), telemetry.MaxDescription+len("…"))
			assert.True(t, strings.HasPrefix(c.Status.Description, "ValueError: nono"), c.Status.Description)
		default:
			assert.Equal(t, "double", attrOf(c, telemetry.AttrFunction).AsString())
			assert.Equal(t, codes.Unset, c.Status.Code)
		}
	}
	assert.Equal(t, 1, failed)

	put := tr.one(t, telemetry.SpanStorePrefix+"put")
	childOf(t, put, exec)
	assert.Equal(t, trace.SpanKindClient, put.SpanKind)
	assert.Equal(t, "memory", attrOf(put, telemetry.AttrStoreBackend).AsString())
	assert.Equal(t, "traced", attrOf(put, telemetry.AttrSessionID).AsString())
	assert.Equal(t, res.StateSize, attrOf(put, telemetry.AttrStoreBytes).AsInt64())

	assert.Equal(t, map[string]uint64{telemetry.OutcomeOK: 1}, tr.points(t, "monty.execution.duration", telemetry.AttrOutcome))
	assert.Equal(t, uint64(1), tr.points(t, "monty.store.operation.duration", telemetry.AttrStoreOperation)["put"])
}

// TestTelemetryOutcomes: an exception, a limit and a cancelled call each
// end the execution span failed, saying how.
func TestTelemetryOutcomes(t *testing.T) {
	tr := newTraced(t)
	limits := runtime.DefaultLimits()
	limits.MaxDuration = 50 * time.Millisecond
	s := open(t, "outcomes", session.Options{Store: memstore.New(memstore.Options{}), Limits: limits, Telemetry: tr.tel})

	res, err := s.Exec(context.Background(), "raise KeyError('k')")
	require.NoError(t, err)
	require.NotNil(t, res.Err)
	res, err = s.Exec(context.Background(), "while True:\n    pass")
	if err == nil {
		require.NotNil(t, res.Err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Exec(ctx, "1")
	require.Error(t, err)

	spans := tr.named(telemetry.SpanExecute)
	require.Len(t, spans, 3)
	byOutcome := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		byOutcome[attrOf(sp, telemetry.AttrOutcome).AsString()] = sp
		assert.Equal(t, codes.Error, sp.Status.Code, "a failed execution's span is failed")
	}
	exc := byOutcome[telemetry.OutcomeException]
	assert.Equal(t, "KeyError", attrOf(exc, telemetry.AttrExceptionType).AsString())
	assert.Equal(t, "KeyError", attrOf(exc, telemetry.AttrErrorType).AsString())
	assert.Equal(t, "time_limit", attrOf(byOutcome[telemetry.OutcomeLimit], telemetry.AttrLimit).AsString())
	require.Contains(t, byOutcome, telemetry.OutcomeCancelled)
	assert.Equal(t, map[string]uint64{telemetry.OutcomeException: 1, telemetry.OutcomeLimit: 1, telemetry.OutcomeCancelled: 1},
		tr.points(t, "monty.execution.duration", telemetry.AttrOutcome))
}

// TestTelemetryPauseResume: a run that stops at a client tool has a pause
// span (with the run and its tools) around the store write of the paused
// run; resuming it is an execution of its own with a resume span.
func TestTelemetryPauseResume(t *testing.T) {
	tr := newTraced(t)
	st := memstore.New(memstore.Options{})
	s := open(t, "pausing", session.Options{Store: st, Telemetry: tr.tel})
	res, err := s.ExecOptions(context.Background(), "answer = ask('q?')\nanswer * 2", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)

	exec := tr.one(t, telemetry.SpanExecute)
	assert.Equal(t, telemetry.OutcomePaused, attrOf(exec, telemetry.AttrOutcome).AsString())
	assert.Equal(t, res.Paused.RunID, attrOf(exec, telemetry.AttrRunID).AsString())
	pause := tr.one(t, telemetry.SpanPause)
	childOf(t, pause, exec)
	assert.Equal(t, res.Paused.RunID, attrOf(pause, telemetry.AttrRunID).AsString())
	assert.Equal(t, []string{"ask"}, attrOf(pause, telemetry.AttrTools).AsStringSlice())
	assert.Equal(t, int64(1), attrOf(pause, telemetry.AttrToolCalls).AsInt64())
	childOf(t, tr.one(t, telemetry.SpanStorePrefix+"put"), pause)

	// Another session (another process, as far as the store can tell)
	// resumes it.
	s = open(t, "pausing", session.Options{Store: st, Telemetry: tr.tel})
	tr.spans.Reset()
	res, err = s.Resume(context.Background(), res.Paused.RunID, []session.ToolResult{{ID: res.Paused.Calls[0].ID, Value: object.Int(21)}})
	require.NoError(t, err)
	require.Equal(t, object.Int(42), res.Value)
	paused := exec
	exec = tr.one(t, telemetry.SpanExecute)
	assert.True(t, attrOf(exec, telemetry.AttrResumed).AsBool())
	require.Len(t, exec.Links, 1, "the resume links to the execution that paused the run, through the store")
	assert.Equal(t, paused.SpanContext.SpanID(), exec.Links[0].SpanContext.SpanID())
	assert.Equal(t, paused.SpanContext.TraceID(), exec.Links[0].SpanContext.TraceID())
	assert.Equal(t, telemetry.OutcomeOK, attrOf(exec, telemetry.AttrOutcome).AsString())
	resume := tr.one(t, telemetry.SpanResume)
	childOf(t, resume, exec)
	assert.Equal(t, int64(1), attrOf(resume, telemetry.AttrToolCalls).AsInt64())

	// A resume of a run that is not paused fails in its resume span.
	tr.spans.Reset()
	_, err = s.Resume(context.Background(), "nope", nil)
	require.ErrorIs(t, err, session.ErrRunNotPaused)
	assert.Equal(t, codes.Error, tr.one(t, telemetry.SpanResume).Status.Code)
	assert.Equal(t, telemetry.OutcomeError, attrOf(tr.one(t, telemetry.SpanExecute), telemetry.AttrOutcome).AsString())
}

// TestTelemetryUnderCallerSpan: an execution joins the trace of the span
// its caller runs under, and without telemetry configured (the global
// no-op providers) nothing is recorded and nothing fails.
func TestTelemetryUnderCallerSpan(t *testing.T) {
	tr := newTraced(t)
	s := open(t, "joined", session.Options{Store: memstore.New(memstore.Options{}), Telemetry: tr.tel})
	ctx, parent := tr.tel.Tracer().Start(context.Background(), "caller")
	_, err := s.Exec(ctx, "1")
	require.NoError(t, err)
	parent.End()
	exec := tr.one(t, telemetry.SpanExecute)
	assert.Equal(t, parent.SpanContext().SpanID(), exec.Parent.SpanID())

	plain := open(t, "plain", session.Options{Store: memstore.New(memstore.Options{})})
	_, err = plain.Exec(context.Background(), "1")
	require.NoError(t, err)
	assert.Len(t, tr.named(telemetry.SpanExecute), 1, "a session without Telemetry reports to the global providers, not to ours")
}

// TestTelemetryStoreErrors: a store failure fails its span; a read that
// finds nothing does not.
func TestTelemetryStoreErrors(t *testing.T) {
	tr := newTraced(t)
	st := tr.tel.Store(memstore.New(memstore.Options{}))
	assert.Same(t, st, tr.tel.Store(st), "tracing a traced store changes nothing")
	ctx, root := tr.tel.Tracer().Start(context.Background(), "root")
	_, err := st.Get(ctx, "missing")
	require.Error(t, err)
	require.NoError(t, st.Close())
	_, err = st.Put(ctx, "x", []byte("1"), store.Cond{})
	require.Error(t, err)
	root.End()
	get := tr.one(t, telemetry.SpanStorePrefix+"get")
	assert.Equal(t, codes.Unset, get.Status.Code)
	assert.False(t, attrOf(get, telemetry.AttrStoreFound).AsBool())
	assert.Equal(t, attribute.BOOL, attrOf(get, telemetry.AttrStoreFound).Type())
	put := tr.one(t, telemetry.SpanStorePrefix+"put")
	assert.Equal(t, codes.Error, put.Status.Code)
	assert.Equal(t, "error", attrOf(put, telemetry.AttrErrorType).AsString())
	assert.True(t, errors.Is(err, store.ErrUnavailable), "the store's error comes back as it was: %v", err)
}

// TestTelemetryTypeCheck: a type check is a child span of the execution,
// with the problems it found; code it refuses ends the execution as
// type_error, and nothing runs.
func TestTelemetryTypeCheck(t *testing.T) {
	tr := newTraced(t)
	s := open(t, "checked", session.Options{Store: memstore.New(memstore.Options{}), Telemetry: tr.tel})
	tc := &session.TypeCheck{Stubs: "def lookup(key: str) -> int: ...\n"}
	_, err := s.ExecOptions(context.Background(), "lookup(1)", session.ExecOptions{TypeCheck: tc})
	var checkErr *typecheck.Error
	require.ErrorAs(t, err, &checkErr)

	exec := tr.one(t, telemetry.SpanExecute)
	assert.Equal(t, telemetry.OutcomeTypeError, attrOf(exec, telemetry.AttrOutcome).AsString())
	assert.Equal(t, codes.Error, exec.Status.Code)
	check := tr.one(t, telemetry.SpanTypeCheck)
	childOf(t, check, exec)
	assert.Equal(t, int64(len(checkErr.Result.Diagnostics)), attrOf(check, telemetry.AttrProblems).AsInt64())
	assert.Equal(t, "problems", attrOf(check, telemetry.AttrOutcome).AsString())
	assert.Empty(t, tr.named(telemetry.SpanStorePrefix+"put"), "refused code stores nothing")

	tr.spans.Reset()
	_, err = s.ExecOptions(context.Background(), "lookup('a') if False else 0", session.ExecOptions{TypeCheck: tc})
	require.NoError(t, err)
	assert.Equal(t, "clean", attrOf(tr.one(t, telemetry.SpanTypeCheck), telemetry.AttrOutcome).AsString())
	assert.Equal(t, map[string]uint64{"problems": 1, "clean": 1}, tr.points(t, "monty.typecheck.duration", telemetry.AttrOutcome))
}
