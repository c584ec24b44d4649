package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

func run(t testing.TB, it *runtime.Interpreter, code string) (object.Value, error) {
	t.Helper()
	p, err := it.Compile(context.Background(), code)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Run(context.Background())
}

func TestRunValue(t *testing.T) {
	it := runtimetest.NewInterp(t)
	v, err := run(t, it, "1 + 1")
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), v)

	v, err = run(t, it, "x = [1, 'a', None, 2.5, (1,), {'k': b'v'}]\nx")
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Int(1), object.Str("a"), object.None{}, object.Float(2.5),
		object.Tuple{object.Int(1)}, object.Dict{{Key: object.Str("k"), Value: object.Bytes("v")}}}, v)

	v, err = run(t, it, "x = 1")
	require.NoError(t, err)
	assert.Equal(t, object.None{}, v, "a program ending in a statement returns None")
}

func TestInputs(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	p, err := it.Compile(ctx, "a * b", runtime.WithInputs("a", "b"))
	require.NoError(t, err)
	for i := int64(0); i < 3; i++ {
		v, err := p.Run(ctx, object.Int(i), object.Int(10))
		require.NoError(t, err)
		assert.Equal(t, object.Int(i*10), v)
	}
	v, err := p.Run(ctx, object.Str("ab"), object.Int(2))
	require.NoError(t, err)
	assert.Equal(t, object.Str("abab"), v)

	_, err = p.Run(ctx, object.Int(1))
	require.ErrorIs(t, err, runtime.ErrBadState, "wrong number of inputs")
}

// Runs reuse what earlier runs in the instance left (their heap page and
// their stack's and globals' storage) without seeing any of it: every run
// starts from fresh globals, whatever ran before and however it ended, and
// repeating runs does not grow the interpreter's memory.
func TestRunsStartFresh(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	compile := func(code string, opts ...runtime.CompileOption) *runtime.Program {
		t.Helper()
		p, err := it.Compile(ctx, code, opts...)
		require.NoError(t, err)
		return p
	}
	define := compile("z = [1, 2, 3]\nw = 'w'\nz")
	read := compile("z")
	double := compile("n * 2", runtime.WithInputs("n"))
	deep := compile("def f(n):\n    return n if n == 300 else f(n + 1)\n[f(0)] * 3")
	fail := compile("v = [1]\n1 / 0")
	round := func() {
		t.Helper()
		v, err := define.Run(ctx)
		require.NoError(t, err)
		assert.Equal(t, object.List{object.Int(1), object.Int(2), object.Int(3)}, v)
		_, err = read.Run(ctx)
		var pyErr *runtime.Error
		require.ErrorAs(t, err, &pyErr)
		assert.Equal(t, "NameError", pyErr.Type, "a global of another program's run is gone")
		v, err = double.Run(ctx, object.Str("ab"))
		require.NoError(t, err)
		assert.Equal(t, object.Str("abab"), v)
		v, err = deep.Run(ctx)
		require.NoError(t, err)
		assert.Equal(t, object.List{object.Int(300), object.Int(300), object.Int(300)}, v)
		_, err = fail.Run(ctx)
		require.ErrorAs(t, err, &pyErr)
		assert.Equal(t, "ZeroDivisionError", pyErr.Type)
	}
	round()
	before, err := it.MemoryUsage(ctx)
	require.NoError(t, err)
	for range 50 {
		round()
	}
	after, err := it.MemoryUsage(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "runs leave nothing behind")
}

func TestSyntaxError(t *testing.T) {
	it := runtimetest.NewInterp(t)
	_, err := it.Compile(context.Background(), "x = 1\ndef f(:\n  pass\n", runtime.WithScriptName("bad.py"))
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	assert.Equal(t, "SyntaxError", pyErr.Type)
	assert.Equal(t, 2, pyErr.Line())
	assert.Contains(t, pyErr.Text, "bad.py")
}

func TestRuntimeException(t *testing.T) {
	it := runtimetest.NewInterp(t)
	code := "def inner(x):\n    return 1 / x\n\ndef outer():\n    return inner(0)\n\nouter()\n"
	_, err := run(t, it, code)
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	assert.Equal(t, "ZeroDivisionError", pyErr.Type)
	assert.Equal(t, "division by zero", pyErr.Message)
	require.Len(t, pyErr.Traceback, 3)
	assert.Equal(t, 7, pyErr.Traceback[0].Line)
	assert.Equal(t, "outer", pyErr.Traceback[1].Name)
	assert.Equal(t, 2, pyErr.Traceback[2].Line)
	assert.Equal(t, "inner", pyErr.Traceback[2].Name)
	assert.Contains(t, pyErr.Text, "Traceback (most recent call last):")
	assert.Contains(t, pyErr.Text, "ZeroDivisionError: division by zero")
	assert.Equal(t, "ZeroDivisionError: division by zero", err.Error())

	// The interpreter is fine afterwards.
	v, err := run(t, it, "2 + 2")
	require.NoError(t, err)
	assert.Equal(t, object.Int(4), v)
}

func TestStartPausesOnFunctionCall(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	p, err := it.Compile(ctx, "r = fetch(1, key='a') + 1\nr * 2", runtime.WithInputs("fetch"))
	require.NoError(t, err)
	e, err := p.Start(ctx, object.Function{Name: "fetch"})
	require.NoError(t, err)
	call, ok := e.Pause().(*runtime.FunctionCall)
	require.True(t, ok, "pause is %T", e.Pause())
	assert.Equal(t, "fetch", call.Name)
	assert.Equal(t, []object.Value{object.Int(1)}, call.Args)
	kw, ok := call.Kwarg("key")
	require.True(t, ok)
	assert.Equal(t, object.Str("a"), kw)

	require.NoError(t, e.Resume(ctx, runtime.Return(object.Int(20))))
	require.True(t, e.Done())
	assert.Equal(t, object.Int(42), e.Value())

	// Resuming a finished execution is misuse.
	require.ErrorIs(t, e.Resume(ctx, runtime.Return(object.None{})), runtime.ErrBadState)
}

func TestNameLookupAndRaise(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	// A name used as a value (not called) is looked up; a called unknown
	// name pauses directly as a function call.
	p, err := it.Compile(ctx, "g = greet\ntry:\n    g('x')\nexcept ValueError as e:\n    out = str(e)\nout")
	require.NoError(t, err)
	e, err := p.Start(ctx)
	require.NoError(t, err)
	look, ok := e.Pause().(*runtime.NameLookup)
	require.True(t, ok, "pause is %T", e.Pause())
	assert.Equal(t, "greet", look.Name)
	require.NoError(t, e.Resume(ctx, runtime.Return(object.Function{Name: "greet"})))
	call, ok := e.Pause().(*runtime.FunctionCall)
	require.True(t, ok)
	assert.Equal(t, "greet", call.Name)
	require.NoError(t, e.Resume(ctx, runtime.Raise("ValueError", "nope")))
	assert.Equal(t, object.Str("nope"), e.Value())

	// An undefined name raises NameError.
	e, err = p.Start(ctx)
	require.NoError(t, err)
	err = e.Resume(ctx, runtime.NotFound())
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	assert.Equal(t, "NameError", pyErr.Type)
}

func TestHostFunctionsSyncAndAsync(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	slow := func(ctx context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return args[0], nil
	}
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"f": {Func: slow, Async: true},
		"g": {Func: slow, Async: true},
		"h": {Func: slow, Async: true},
		"add": {Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
			return args[0].(object.Int) + args[1].(object.Int), nil
		}},
		"fail": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			return nil, &runtime.Exception{Type: "KeyError", Message: "missing"}
		}},
	}}
	code := `
import asyncio
async def main():
    return await asyncio.gather(f(1), g(2), h(3))
r = asyncio.run(main())
try:
    fail()
except KeyError:
    r.append(add(40, 2))
r
`
	p, err := it.Compile(ctx, code)
	require.NoError(t, err)
	start := time.Now()
	v, err := host.Run(ctx, p)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Int(1), object.Int(2), object.Int(3), object.Int(42)}, v)
	assert.Less(t, elapsed, 280*time.Millisecond, "three 100 ms async calls under gather run concurrently")
}

func TestHostCallLimit(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	it.SetLimits(runtime.Limits{MaxHostCalls: 5})
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"tick": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) { return object.None{}, nil }},
	}}
	p, err := it.Compile(ctx, "for i in range(10):\n    try:\n        tick()\n    except Exception:\n        pass\n")
	require.NoError(t, err)
	_, err = host.Run(ctx, p)
	require.ErrorIs(t, err, runtime.ErrHostCallLimit, "the limit cannot be caught by Python")
}

func TestREPLKeepsState(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx, "x = 41\ndef inc(v):\n    return v + 1\nclass P:\n    def __init__(self, n):\n        self.n = n")
	require.NoError(t, err)
	v, err := r.Run(ctx, "inc(x)")
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), v)

	_, err = r.Run(ctx, "y = 1\nraise ValueError('boom')")
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	assert.Equal(t, "ValueError", pyErr.Type)
	v, err = r.Run(ctx, "P(x).n + y")
	require.NoError(t, err, "state survives an exception")
	assert.Equal(t, object.Int(42), v)

	v, err = r.Run(ctx, "z", runtime.Input{Name: "z", Value: object.Str("in")})
	require.NoError(t, err)
	assert.Equal(t, object.Str("in"), v)
}

func TestContinuation(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	for code, want := range map[string]runtime.Continuation{
		"x = 1":          runtime.Complete,
		"foo(1,":         runtime.Incomplete,
		"def f():":       runtime.IncompleteBlock,
		"'''abc":         runtime.Incomplete,
		"def f(:\n  pas": runtime.Complete,
	} {
		got, err := it.Continuation(ctx, code)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%q", code)
	}
}

func TestPrintCollectedAndStreamed(t *testing.T) {
	it := runtimetest.NewInterp(t)
	_, err := run(t, it, "print('a', 1)\nimport sys\nprint('err', file=sys.stderr)\nprint('b', end='')")
	require.NoError(t, err)
	assert.Equal(t, "a 1\nerr\nb", it.Output())

	// Streaming: a print before a long computation arrives before it ends.
	type chunk struct {
		stream runtime.Stream
		text   string
		at     time.Time
	}
	var got []chunk
	it.SetPrintFunc(func(s runtime.Stream, text string) { got = append(got, chunk{s, text, time.Now()}) })
	start := time.Now()
	_, err = run(t, it, "import time\nprint('early')\nt = time.monotonic()\nwhile time.monotonic() - t < 0.3:\n    pass\nprint('late')")
	end := time.Now()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(got), 2)
	assert.Equal(t, "early\n", got[0].text)
	assert.Less(t, got[0].at.Sub(start), end.Sub(start)-200*time.Millisecond, "first line streamed before the loop ended")
}

func TestLimits(t *testing.T) {
	it := runtimetest.NewInterp(t)
	it.SetLimits(runtime.Limits{MaxDuration: 50 * time.Millisecond})
	_, err := run(t, it, "while True:\n    pass")
	require.ErrorIs(t, err, runtime.ErrTimeLimit)
	assert.NotErrorIs(t, err, runtime.ErrMemoryLimit)

	it.SetLimits(runtime.Limits{MaxMemory: 8 << 20})
	_, err = run(t, it, "x = []\nwhile True:\n    x.append('y' * 1000)")
	require.ErrorIs(t, err, runtime.ErrMemoryLimit)

	it.SetLimits(runtime.Limits{MaxRecursion: 50})
	_, err = run(t, it, "def f(n):\n    return f(n + 1)\nf(0)")
	require.ErrorIs(t, err, runtime.ErrRecursionLimit)

	it.SetLimits(runtime.Limits{MaxOutput: 10})
	_, err = run(t, it, "for i in range(100):\n    print(i)")
	require.ErrorIs(t, err, runtime.ErrOutputLimit)
	assert.LessOrEqual(t, len(it.Output()), 10)

	// After every limit error the interpreter still works.
	it.SetLimits(runtime.DefaultLimits())
	v, err := run(t, it, "sum(range(10))")
	require.NoError(t, err)
	assert.Equal(t, object.Int(45), v)
}

func TestCancellation(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for _, code := range []string{"while True:\n    pass", "import time\ntime.sleep(30)"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		p, err := it.Compile(ctx, code)
		require.NoError(t, err)
		start := time.Now()
		_, err = p.Run(ctx)
		elapsed := time.Since(start)
		cancel()
		require.ErrorIs(t, err, runtime.ErrCancelled, code)
		require.ErrorIs(t, err, context.DeadlineExceeded, code)
		assert.Less(t, elapsed, time.Second, "stopped promptly after the deadline: %s", code)
	}
	// Usable afterwards, and the clock is back to normal.
	it.SetLimits(runtime.Limits{MaxDuration: time.Second})
	v, err := run(t, it, "1")
	require.NoError(t, err)
	assert.Equal(t, object.Int(1), v)

	// An already-cancelled context runs nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = it.Compile(ctx, "1")
	require.ErrorIs(t, err, context.Canceled)
}

// requireNewInterpreterWorks: e makes an interpreter that runs code (after
// another of its interpreters died).
func requireNewInterpreterWorks(t *testing.T, e *runtime.Engine) {
	t.Helper()
	ctx := context.Background()
	other, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	defer other.Close(ctx)
	v, err := run(t, other, "'alive'")
	require.NoError(t, err)
	assert.Equal(t, object.Str("alive"), v)
}

func TestTrapKillsOnlyThatInterpreter(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.WithMaxMemoryPages(1024))
	require.NoError(t, err)
	defer e.Close(ctx)
	it, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	// No soft limit: the allocation fails at the 64 MiB linear memory cap,
	// which aborts the instance.
	p, err := it.Compile(ctx, "x = b'a' * (200 * 1024 * 1024)")
	require.NoError(t, err)
	_, err = p.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrDead)
	var trap *runtime.TrapError
	require.ErrorAs(t, err, &trap)
	assert.NotContains(t, err.Error(), "wasm stack trace", "a reader gets one line, not wazero's trace")
	_, err = it.Compile(ctx, "1")
	require.ErrorIs(t, err, runtime.ErrDead, "a dead interpreter stays dead")

	requireNewInterpreterWorks(t, e)
}

func TestBadPython(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for code, typ := range map[string]string{
		"undefined_name":       "NameError",
		"[1][5]":               "IndexError",
		"{}['k']":              "KeyError",
		"int('x')":             "ValueError",
		"'a' + 1":              "TypeError",
		"import socket":        "ModuleNotFoundError",
		"assert False, 'msg'":  "AssertionError",
		"raise RuntimeError()": "RuntimeError",
		"x = (":                "SyntaxError",
		"open('/etc/passwd')":  "PermissionError",
	} {
		_, err := runHost(t, it, code)
		var pyErr *runtime.Error
		require.ErrorAs(t, err, &pyErr, code)
		assert.Equal(t, typ, pyErr.Type, code)
	}
}

func runHost(t testing.TB, it *runtime.Interpreter, code string) (object.Value, error) {
	t.Helper()
	p, err := it.Compile(context.Background(), code)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var h runtime.Host
	return h.Run(context.Background(), p)
}
