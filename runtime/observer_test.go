package runtime_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// observedCall is what recordingObserver saw of one host call.
type observedCall struct {
	name          string
	async, method bool
	ended         bool
	err           string // the outcome's text; "" when it succeeded
	excType       string // the *runtime.Exception's type, if the outcome is one
}

// recordingObserver records the calls a Host makes, and hands each
// function a context carrying its call's name.
type recordingObserver struct {
	mu    sync.Mutex
	calls []*observedCall
}

type callNameKey struct{}

func (o *recordingObserver) StartHostCall(ctx context.Context, call *runtime.FunctionCall, async bool) (context.Context, func(error)) {
	c := &observedCall{name: call.Name, async: async, method: call.ObjectID != nil}
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
	return context.WithValue(ctx, callNameKey{}, call.Name), func(err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		c.ended = true
		if err != nil {
			c.err = err.Error()
			var exc *runtime.Exception
			if errors.As(err, &exc) {
				c.excType = exc.Type
			}
		}
	}
}

// sorted returns the calls by name (async ones end in any order).
func (o *recordingObserver) sorted() []observedCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]observedCall, 0, len(o.calls))
	for _, c := range o.calls {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// TestHostCallObserver: a Host's Observer sees every host function and
// host object method call it makes, sync and async, with its outcome
// (returned, raised, panicked), and the function runs with the context
// the observer returned; External calls, attribute reads and OS calls are
// not its calls.
func TestHostCallObserver(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	c, host := newCounterHost()
	obs := &recordingObserver{}
	host.Observer = obs
	host.OS = runtime.Env{"HOME": "/home"}
	named := func(ctx context.Context, _ []object.Value, _ []object.Pair) (object.Value, error) {
		name, _ := ctx.Value(callNameKey{}).(string)
		return object.Str(name), nil
	}
	host.Functions = map[string]runtime.Function{
		"named":       {Func: named},
		"named_async": {Func: named, Async: true},
		"fail": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			return nil, &runtime.Exception{Type: "ValueError", Message: "no"}
		}},
		"boom": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			panic("a bug")
		}},
	}
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	v, err := host.Feed(ctx, r, `
import os
try:
    fail()
except ValueError:
    pass
try:
    boom()
except RuntimeError:
    pass
os.getenv('HOME')
counter.value
counter.add(2)
(named(), await named_async())`, runtime.Input{Name: "counter", Value: c.instance()})
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("named"), object.Str("named_async")}, v, "each function ran with its observer's context")

	assert.Equal(t, []observedCall{
		{name: "add", method: true, ended: true},
		{name: "boom", ended: true, err: "host function panicked: a bug"},
		{name: "fail", ended: true, err: "ValueError: no", excType: "ValueError"},
		{name: "named", ended: true},
		{name: "named_async", async: true, ended: true},
	}, obs.sorted())

	// A call its caller answers is not the Host's to make.
	obs.calls = nil
	host.Functions["ask"] = runtime.Function{External: true}
	_, err = host.Feed(ctx, r, "ask()")
	var suspended *runtime.Suspended
	require.ErrorAs(t, err, &suspended)
	assert.Empty(t, obs.sorted())
}

// endless observes calls with no outcome wanted: a nil end.
type endless struct{ started int }

func (e *endless) StartHostCall(ctx context.Context, _ *runtime.FunctionCall, _ bool) (context.Context, func(error)) {
	e.started++
	return ctx, nil
}

// TestHostCallObserverNilEnd: an observer may want no outcome; the call
// runs as it would unobserved, a panicking one included.
func TestHostCallObserverNilEnd(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	obs := &endless{}
	host := &runtime.Host{Observer: obs, Functions: map[string]runtime.Function{
		"one": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) { return object.Int(1), nil }},
		"boom": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			panic("a bug")
		}},
	}}
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	v, err := host.Feed(ctx, r, "one() + one()")
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), v)
	_, err = host.Feed(ctx, r, "boom()")
	assert.Equal(t, "RuntimeError", runtimetest.PyErrType(t, err))
	assert.Contains(t, err.Error(), "panicked")
	assert.Equal(t, 3, obs.started)
}
