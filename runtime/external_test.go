package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// TestExternalCalls: a run stops at calls its caller answers, is dumped,
// loaded into another interpreter and continued there: a sync call, then
// three async ones gathered, answered in two rounds, with a host function
// in between.
func TestExternalCalls(t *testing.T) {
	ctx := context.Background()
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"ask":   {External: true},
		"fetch": {External: true, Async: true},
		"double": {Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
			return args[0].(object.Int) * 2, nil
		}},
	}}
	it := runtimetest.NewInterp(t)
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	e, err := r.Feed(ctx, `
import asyncio
name = ask('who?')
async def main():
    return await asyncio.gather(fetch(1), fetch(2), fetch(3))
got = await main()
(name, double(len(got)), got)`)
	require.NoError(t, err)
	_, err = host.Drive(ctx, e)
	var s *runtime.Suspended
	require.ErrorAs(t, err, &s)
	require.Len(t, s.Calls, 1)
	assert.Equal(t, "ask", s.Calls[0].Name)
	assert.Equal(t, []object.Value{object.Str("who?")}, s.Calls[0].Args)
	assert.Equal(t, []uint32{s.Calls[0].CallID}, s.Waiting)

	// Another interpreter, as another process would.
	move := func(e *runtime.Execution, r *runtime.REPL) (*runtime.Execution, *runtime.REPL) {
		dump, err := r.Dump(ctx)
		require.NoError(t, err)
		it2 := runtimetest.NewInterp(t)
		r2, e2, err := it2.LoadREPL(ctx, dump)
		require.NoError(t, err)
		require.NotNil(t, e2, "the dump holds the paused feed")
		return e2, r2
	}
	e, r = move(e, r)
	require.NoError(t, e.Resume(ctx, runtime.Return(object.Str("ada"))))
	_, err = host.Continue(ctx, e, nil)
	require.ErrorAs(t, err, &s)
	require.Len(t, s.Calls, 3, "gather made all three before the run stopped")
	assert.Len(t, s.Waiting, 3)

	e, r = move(e, r)
	first := s.Calls[0].CallID
	require.NoError(t, e.Resume(ctx, runtime.Resolve(runtime.FutureResult{CallID: first, Value: object.Str("one")})))
	var rest []uint32
	for _, c := range s.Calls[1:] {
		rest = append(rest, c.CallID)
	}
	_, err = host.Continue(ctx, e, rest)
	require.ErrorAs(t, err, &s)
	assert.ElementsMatch(t, rest, s.Waiting, "still waiting for the other two")

	// The answer runs the code on: its exception ends the run right here.
	err = e.Resume(ctx, runtime.Resolve(
		runtime.FutureResult{CallID: rest[0], Value: object.Str("two")},
		runtime.FutureResult{CallID: rest[1], Err: &runtime.Exception{Type: "ValueError", Message: "no three"}}))
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr, "the client's error is raised in the code")
	assert.True(t, e.Done())
	assert.Equal(t, "ValueError", pyErr.Type)
	v, err := host.Feed(ctx, r, "name")
	require.NoError(t, err)
	assert.Equal(t, object.Str("ada"), v, "the REPL lives on with what the run set")

	// An async host function or client tool awaited at once.
	host.Functions["twice"] = runtime.Function{Async: true, Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
		return args[0].(object.Int) * 2, nil
	}}
	e, err = r.Feed(ctx, "a = await twice(21)\nb = await fetch('now')\n(a, b)")
	require.NoError(t, err)
	_, err = host.Drive(ctx, e)
	require.ErrorAs(t, err, &s)
	require.Len(t, s.Calls, 1)
	require.NoError(t, e.Resume(ctx, runtime.Resolve(runtime.FutureResult{CallID: s.Calls[0].CallID, Value: object.Str("later")})))
	v, err = host.Continue(ctx, e, nil)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Int(42), object.Str("later")}, v)

	// A sync external call while a host async call runs is refused.
	host.Functions["slow"] = runtime.Function{Async: true, Func: func(ctx context.Context, _ []object.Value, _ []object.Pair) (object.Value, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	_, err = host.Feed(ctx, r, "t = slow()\nask('now?')")
	require.ErrorAs(t, err, &pyErr)
	assert.Contains(t, pyErr.Message, "await the host's async calls")
}

// TestDumpWithSpawnedTasks: a run paused while tasks it spawned (coroutines
// gathered) wait on async calls is dumped, loaded into another interpreter
// and finished there; every task comes back and delivers its result.
func TestDumpWithSpawnedTasks(t *testing.T) {
	ctx := context.Background()
	host := &runtime.Host{Functions: map[string]runtime.Function{"fetch": {External: true, Async: true}}}
	r, err := runtimetest.NewInterp(t).NewREPL(ctx)
	require.NoError(t, err)
	e, err := r.Feed(ctx, `
import asyncio
async def work(i):
    v = await fetch(i)
    return v * 10
await asyncio.gather(work(1), work(2), work(3))`)
	require.NoError(t, err)
	_, err = host.Drive(ctx, e)
	var s *runtime.Suspended
	require.ErrorAs(t, err, &s)
	require.Len(t, s.Calls, 3, "each task made its call")

	dump, err := r.Dump(ctx)
	require.NoError(t, err)
	_, e, err = runtimetest.NewInterp(t).LoadREPL(ctx, dump)
	require.NoError(t, err)
	require.NotNil(t, e)
	var answers []runtime.FutureResult
	for _, c := range s.Calls {
		answers = append(answers, runtime.FutureResult{CallID: c.CallID, Value: c.Args[0]})
	}
	require.NoError(t, e.Resume(ctx, runtime.Resolve(answers...)))
	v, err := host.Continue(ctx, e, nil)
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Int(10), object.Int(20), object.Int(30)}, v)
}
