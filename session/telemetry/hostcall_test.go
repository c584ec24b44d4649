package telemetry_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/telemetry"
)

// echoObjects serves host objects whose every method returns its name.
type echoObjects struct{}

func (echoObjects) Attr(context.Context, object.UUID, string) (object.Value, error) {
	return nil, runtime.ErrNotHandled
}

func (echoObjects) Method(_ context.Context, _ object.UUID, name string) (runtime.Function, error) {
	return runtime.Function{Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
		return object.Str(name), nil
	}}, nil
}

func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func attr(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestHostCallSpans: a runtime.Host driven directly, with HostCallSpans
// as its Observer, makes a monty.host_call span of each host function and
// host object method call under the caller's recording span, saying which
// was async and which a method, and ends a failed one failed with the
// exception's type and a clipped message; without a recording span it
// makes none.
func TestHostCallSpans(t *testing.T) {
	ctx := context.Background()
	tp, exp := newTracer(t)
	eng, err := runtime.Default(ctx)
	require.NoError(t, err)
	it, err := eng.NewInterpreter(ctx)
	require.NoError(t, err)
	defer it.Close(ctx)

	host := &runtime.Host{
		Observer: telemetry.HostCallSpans{},
		Objects:  echoObjects{},
		Functions: map[string]runtime.Function{
			"later": {Async: true, Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
				return object.Int(1), nil
			}},
			"fail": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
				return nil, &runtime.Exception{Type: strings.Repeat("E", 300), Message: "no"}
			}},
		},
	}
	obj := runtime.Input{Name: "obj", Value: object.Instance{Class: object.ClassType{Name: "Echo", ID: object.UUID{1}, HostDefined: true}, ID: object.UUID{2}}}
	code := "try:\n    fail()\nexcept Exception:\n    pass\n(await later(), obj.hello())"

	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	v, err := host.Feed(ctx, r, code, obj)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Int(1), object.Str("hello")}, v)
	assert.Empty(t, exp.GetSpans(), "no recording span, no host call span")

	tctx, root := tp.Tracer("test").Start(ctx, "root")
	_, err = host.Feed(tctx, r, code, obj)
	root.End()
	require.NoError(t, err)

	calls := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.Name == telemetry.SpanHostCall {
			assert.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID(), "under the caller's span")
			calls[attr(s, telemetry.AttrFunction).AsString()] = s
		}
	}
	require.Len(t, calls, 3)
	assert.True(t, attr(calls["later"], telemetry.AttrAsync).AsBool())
	assert.False(t, attr(calls["later"], telemetry.AttrMethod).AsBool())
	assert.True(t, attr(calls["hello"], telemetry.AttrMethod).AsBool())
	assert.False(t, attr(calls["hello"], telemetry.AttrAsync).AsBool())
	assert.Equal(t, codes.Unset, calls["hello"].Status.Code)
	failed := calls["fail"]
	assert.Equal(t, codes.Error, failed.Status.Code)
	assert.Equal(t, telemetry.Clip(strings.Repeat("E", 300)), attr(failed, telemetry.AttrExceptionType).AsString())
	assert.LessOrEqual(t, len(failed.Status.Description), telemetry.MaxDescription+len("…"))
}

// countingObserver counts the host calls it sees.
type countingObserver struct{ n atomic.Int64 }

func (c *countingObserver) StartHostCall(ctx context.Context, _ *runtime.FunctionCall, _ bool) (context.Context, func(error)) {
	c.n.Add(1)
	return ctx, nil
}

// TestSessionKeepsHostObserver: a session traces its Host's calls unless
// the Host has an Observer of its own, which then sees them instead.
func TestSessionKeepsHostObserver(t *testing.T) {
	ctx := context.Background()
	tp, exp := newTracer(t)
	obs := &countingObserver{}
	host := &runtime.Host{Observer: obs, Functions: map[string]runtime.Function{
		"one": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) { return object.Int(1), nil }},
	}}
	s, err := session.Open(ctx, "observed", session.Options{
		Store:     memstore.New(memstore.Options{}),
		Host:      host,
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp}),
	})
	require.NoError(t, err)
	defer s.Close(ctx)
	res, err := s.Exec(ctx, "one() + one()")
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), res.Value)
	assert.Equal(t, int64(2), obs.n.Load())
	var names []string
	for _, sp := range exp.GetSpans() {
		names = append(names, sp.Name)
	}
	assert.Contains(t, names, telemetry.SpanExecute)
	assert.NotContains(t, names, telemetry.SpanHostCall)
}
