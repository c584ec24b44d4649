package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// counterObjects serves one host object (a counter) and its class.
type counterObjects struct {
	class, obj object.UUID
	n          atomic.Int64
	block      chan struct{} // "wait" blocks on it
}

func (c *counterObjects) Attr(_ context.Context, id object.UUID, name string) (object.Value, error) {
	switch {
	case id == c.obj && name == "value":
		return object.Int(c.n.Load()), nil
	case id == c.obj && name == "bad":
		panic("attribute getter exploded")
	}
	return nil, runtime.ErrNotHandled
}

func (c *counterObjects) Method(_ context.Context, id object.UUID, name string) (runtime.Function, error) {
	add := func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
		n, _ := args[0].(object.Int)
		return object.Int(c.n.Add(int64(n))), nil
	}
	switch {
	case id == c.obj && name == "add":
		return runtime.Function{Func: add}, nil
	case id == c.obj && name == "add_async":
		return runtime.Function{Func: add, Async: true}, nil
	case id == c.obj && name == "wait":
		return runtime.Function{Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			<-c.block // ignores its context on purpose
			return object.None{}, nil
		}}, nil
	case id == c.obj && name == "explode":
		return runtime.Function{Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			panic("method exploded")
		}}, nil
	case id == c.obj && name == "trap":
		panic("lookup exploded")
	case id == c.class && name == "__call__":
		return runtime.Function{Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			return c.instance(), nil
		}}, nil
	}
	return runtime.Function{}, &runtime.Exception{Type: "AttributeError", Message: fmt.Sprintf("'Counter' object has no attribute '%s'", name)}
}

func (c *counterObjects) classType() object.ClassType {
	return object.ClassType{Name: "Counter", ID: c.class, HostDefined: true}
}

func (c *counterObjects) instance() object.Instance {
	return object.Instance{Class: c.classType(), ID: c.obj}
}

func newCounterHost() (*counterObjects, *runtime.Host) {
	c := &counterObjects{class: object.UUID{1}, obj: object.UUID{2}, block: make(chan struct{})}
	return c, &runtime.Host{Objects: c, Values: map[string]object.Value{"Counter": c.classType()}}
}

// TestHostObjects: attribute reads and method calls on a host object come
// back to the host, sync and async; the class is found by name and calling
// it constructs through the host; reads are fresh every time.
func TestHostObjects(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	c, host := newCounterHost()
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	in := runtime.Input{Name: "counter", Value: c.instance()}

	v, err := host.Feed(ctx, r, "before = counter.value\ncounter.add(5)\n(before, counter.value, counter.add(2))", in)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Int(0), object.Int(5), object.Int(7)}, v)

	v, err = host.Feed(ctx, r, `
import asyncio
async def main():
    return await asyncio.gather(counter.add_async(1), counter.add_async(1), counter.add_async(1))
results = await main()
(sorted(results), counter.value)`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.List{object.Int(8), object.Int(9), object.Int(10)}, object.Int(10)}, v)

	v, err = host.Feed(ctx, r, "made = Counter()\n(type(made) is Counter, isinstance(counter, Counter), made.value)")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Bool(true), object.Bool(true), object.Int(10)}, v)

	// The object survives in the REPL's state as a reference.
	v, err = host.Feed(ctx, r, "counter.add(1)")
	require.NoError(t, err)
	assert.Equal(t, object.Int(11), v)
}

// TestHostObjectFailures: what the host cannot or will not answer is a
// Python exception, never a host crash.
func TestHostObjectFailures(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	c, host := newCounterHost()
	in := runtime.Input{Name: "counter", Value: c.instance()}
	cases := []struct{ code, excType, contains string }{
		{"counter.missing", "AttributeError", "missing"},
		{"counter.nope()", "AttributeError", "no attribute 'nope'"},
		{"counter._private", "AttributeError", "_private"},
		{"counter.bad", "RuntimeError", "panicked"},
		{"counter.explode()", "RuntimeError", "panicked"},
		{"counter.trap()", "RuntimeError", "lookup panicked"},
	}
	for _, tc := range cases {
		r, err := it.NewREPL(ctx)
		require.NoError(t, err)
		_, err = host.Feed(ctx, r, tc.code, in)
		require.Error(t, err, tc.code)
		assert.Equal(t, tc.excType, runtimetest.PyErrType(t, err), tc.code)
		assert.Contains(t, err.Error(), tc.contains, tc.code)
	}

	// Without an ObjectHandler, host objects have no host-side attributes.
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = (&runtime.Host{}).Feed(ctx, r, "counter.add(1)", in)
	assert.Equal(t, "AttributeError", runtimetest.PyErrType(t, err))

	// A method that blocks past the time limit ends the run with it.
	limits := runtime.DefaultLimits()
	limits.MaxDuration = 200 * time.Millisecond
	it.SetLimits(limits)
	r, err = it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = host.Feed(ctx, r, "counter.wait()", in)
	require.ErrorIs(t, err, runtime.ErrTimeLimit)
	close(c.block)

	// Attribute reads count as host calls.
	limits = runtime.DefaultLimits()
	limits.MaxHostCalls = 3
	it.SetLimits(limits)
	r, err = it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = host.Feed(ctx, r, "for _ in range(10):\n    counter.value", in)
	require.ErrorIs(t, err, runtime.ErrHostCallLimit)
}
