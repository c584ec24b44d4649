package runtime_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// replRun runs code in a new REPL made with opts.
func replRun(t *testing.T, it *runtime.Interpreter, code string, opts ...runtime.CompileOption) (object.Value, error) {
	t.Helper()
	ctx := context.Background()
	r, err := it.NewREPL(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Run(ctx, code)
}

func TestRandomSeeds(t *testing.T) {
	it := runtimetest.NewInterp(t)
	draw := "import random\n[random.random(), random.randint(1, 10**9)]"
	huge := object.IntFromBig(new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 70)))
	seen := map[string]bool{}
	for _, seed := range []object.Value{object.Int(42), object.Int(-1), huge, object.Float(2.5), object.Str("abc"), object.Bytes{0, 1}} {
		a, err := replRun(t, it, draw, runtime.WithRandomSeed(seed))
		require.NoError(t, err)
		b, err := replRun(t, it, draw, runtime.WithRandomSeed(seed))
		require.NoError(t, err)
		assert.True(t, object.Equal(a, b), "seed %s repeats", object.Repr(seed))
		// The same as random.seed(seed) in the code.
		c, err := replRun(t, it, "import random\nrandom.seed("+object.Repr(seed)+")\n"+draw[len("import random\n"):])
		require.NoError(t, err)
		assert.True(t, object.Equal(a, c), "seed %s: policy %s, random.seed %s", object.Repr(seed), object.Repr(a), object.Repr(c))
		seen[object.Repr(a)] = true
	}
	assert.Len(t, seen, 6, "different seeds draw differently")
	_, err := replRun(t, it, draw, runtime.WithRandomSeed(object.List{}))
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
}

func TestHostRandom(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	r, err := it.NewREPL(ctx, runtime.WithHostRandom())
	require.NoError(t, err)
	ex, err := r.Feed(ctx, "import random\nrandom.randint(1, 10**9)")
	require.NoError(t, err)
	call, ok := ex.Pause().(*runtime.OSCall)
	require.True(t, ok, "the first draw asks the host: %#v", ex.Pause())
	require.Equal(t, "os.urandom", call.Name)
	assert.Equal(t, object.Int(2496), call.Args[0])
	require.NoError(t, ex.Resume(ctx, runtime.Return(object.Bytes(make([]byte, 2496)))))
	assert.NotNil(t, ex.Value())
}

func TestFixedClockAndZone(t *testing.T) {
	it := runtimetest.NewInterp(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	name := "NST"
	v, err := replRun(t, it, "import datetime, time\n[str(datetime.datetime.now()), time.time(), str(datetime.date.today())]",
		runtime.WithFixedClock(at), runtime.WithFixedTimezone(object.TimeZone{Offset: -(3*3600 + 1800), Name: &name}))
	require.NoError(t, err)
	assert.Equal(t, "['2030-01-01 23:34:05.000006', 1893553445.000006, '2030-01-01']", object.Repr(v))
	_, err = replRun(t, it, "1", runtime.WithFixedClock(at), runtime.WithHostClock())
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	_, err = replRun(t, it, "1", runtime.WithFixedTimezone(object.TimeZone{}), runtime.WithTimezone("UTC"))
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	_, err = replRun(t, it, "1", runtime.WithFixedTimezone(object.TimeZone{Offset: 86400}))
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
}

func TestAssertAnnotationsAndProcessTime(t *testing.T) {
	it := runtimetest.NewInterp(t)
	code := "a = 'abcdefgh'\nassert a == 'xyz'"
	for n, want := range map[int]string{-1: "assert 'abcdefgh' == 'xyz'", 0: "", 3: "assert 'ab… == 'xy…"} {
		var opts []runtime.CompileOption
		if n >= 0 {
			opts = append(opts, runtime.WithAssertAnnotations(n))
		}
		_, err := replRun(t, it, code, opts...)
		var pyErr *runtime.Error
		require.ErrorAs(t, err, &pyErr)
		assert.Equal(t, "AssertionError", pyErr.Type)
		assert.Equal(t, want, pyErr.Message, "annotations %d", n)
	}
	spin := "import time\nn = 0\nwhile n < 200000:\n    n += 1\ntime.process_time() > 0"
	v, err := replRun(t, it, spin)
	require.NoError(t, err)
	assert.Equal(t, object.Bool(false), v, "process_time is 0 by default")
	v, err = replRun(t, it, spin, runtime.WithElapsedProcessTime())
	require.NoError(t, err)
	assert.Equal(t, object.Bool(true), v)
}

func TestREPLSetCwd(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.SetCwd(ctx, "/data/sub"))
	v, err := r.Run(ctx, "import os\nos.getcwd()")
	require.NoError(t, err)
	assert.Equal(t, object.Str("/data/sub"), v)
	require.ErrorIs(t, r.SetCwd(ctx, "relative"), runtime.ErrInvalidOption)
	ex, err := r.Feed(ctx, "x = ask()")
	require.NoError(t, err)
	require.ErrorIs(t, r.SetCwd(ctx, "/"), runtime.ErrBadState, "not while a feed is paused")
	ex.Close(ctx)
	require.NoError(t, r.SetCwd(ctx, "/"))
}
