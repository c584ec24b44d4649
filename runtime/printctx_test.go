package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// WithPrintFunc routes one run's output without changing the interpreter's
// settings, streams it line by line, keeps MaxOutput, and leaves later runs
// without it to the interpreter's own destination.
func TestWithPrintFunc(t *testing.T) {
	it := runtimetest.NewInterp(t)
	var got []string
	var streams []runtime.Stream
	var firstAt time.Time
	ctx := runtime.WithPrintFunc(context.Background(), func(s runtime.Stream, text string) {
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
		got = append(got, text)
		streams = append(streams, s)
	})
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	start := time.Now()
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"ping": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			got = append(got, "<ping>")
			return object.Str("pong"), nil
		}},
	}}
	v, err := host.Feed(ctx, r, `import sys, time
print('early')
t = time.monotonic()
while time.monotonic() - t < 0.3:
    pass
print('err', file=sys.stderr)
ping()
print('late', end='')
7`)
	end := time.Now()
	require.NoError(t, err)
	assert.Equal(t, object.Int(7), v)
	assert.Equal(t, "early\nerr\n<ping>late", strings.Join(got, ""))
	assert.Contains(t, streams, runtime.Stderr)
	assert.Less(t, firstAt.Sub(start), end.Sub(start)-200*time.Millisecond, "first line streamed before the loop ended")
	assert.Empty(t, it.Output(), "routed output is not also collected")

	// Without the context value, output is collected again.
	_, err = r.Run(context.Background(), "print('collected')")
	require.NoError(t, err)
	assert.Equal(t, "collected\n", it.Output())

	// MaxOutput still applies to routed output.
	it.SetLimits(runtime.Limits{MaxOutput: 10})
	got = nil
	_, err = r.Run(ctx, "for i in range(100):\n    print(i)")
	require.ErrorIs(t, err, runtime.ErrOutputLimit)
	assert.LessOrEqual(t, len(strings.Join(got, "")), 10)
}

// TestCloseInPrintCallback: an interpreter closed by its own print
// callback, while the module runs, is closed when the module returns; the
// run fails with ErrDead and the host goes on.
func TestCloseInPrintCallback(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(t, err)
	it, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	printed := 0
	during := runtime.WithPrintFunc(ctx, func(runtime.Stream, string) {
		printed++
		require.NoError(t, it.Close(ctx))
	})
	p, err := it.Compile(ctx, "print('a')\nx = [1] * 100_000\nprint('b')\nlen(x)")
	require.NoError(t, err)
	_, err = p.Run(during)
	require.ErrorIs(t, err, runtime.ErrDead)
	assert.Positive(t, printed)
	_, err = it.Compile(ctx, "1")
	require.ErrorIs(t, err, runtime.ErrDead)
	require.NoError(t, it.Close(ctx))

	requireNewInterpreterWorks(t, e)
}
