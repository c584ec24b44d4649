package runtime_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// benchSource reads a workload shared with the native and CPython
// comparisons (scripts/bench/table.sh).
func benchSource(b *testing.B, name string) string {
	b.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "bench", name))
	require.NoError(b, err)
	return string(src)
}

func benchRun(b *testing.B, it *runtime.Interpreter, ctx context.Context, file string) {
	p, err := it.Compile(ctx, benchSource(b, file))
	require.NoError(b, err)
	_, err = p.Run(ctx) // warm up
	require.NoError(b, err)
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTinyCall runs `1 + 1` on a warm interpreter.
func BenchmarkTinyCall(b *testing.B) {
	benchRun(b, runtimetest.NewInterp(b), context.Background(), "tiny.py")
}

// BenchmarkFib25 runs a compute-bound recursive fib(25).
func BenchmarkFib25(b *testing.B) {
	benchRun(b, runtimetest.NewInterp(b), context.Background(), "fib25.py")
}

// BenchmarkLoop is a tight bytecode loop of a million iterations: the cost
// of the always-armed time check that makes cancellation work is measured
// by the variants below.
func BenchmarkLoop(b *testing.B) {
	b.Run("background-ctx", func(b *testing.B) { benchRun(b, runtimetest.NewInterp(b), context.Background(), "loop.py") })
	b.Run("cancellable-ctx", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		it := runtimetest.NewInterp(b)
		benchRun(b, it, ctx, "loop.py")
		b.ReportMetric(float64(it.ClockReads())/float64(b.N), "clockreads/op")
	})
	b.Run("wazero-close-on-done", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e, err := runtime.NewEngine(ctx, runtime.WithCloseOnContextDone())
		require.NoError(b, err)
		defer e.Close(ctx)
		it, err := e.NewInterpreter(ctx)
		require.NoError(b, err)
		benchRun(b, it, ctx, "loop.py")
	})
}

// BenchmarkClockRead measures one monotonic clock read as the guest sees it
// (time.monotonic() minus an empty call), the unit cost of the time check.
func BenchmarkClockRead(b *testing.B) {
	it := runtimetest.NewInterp(b)
	ctx := context.Background()
	p, err := it.Compile(ctx, "import time\nfor i in range(10000):\n    time.monotonic()")
	require.NoError(b, err)
	q, err := it.Compile(ctx, "import time\nfor i in range(10000):\n    abs(1)")
	require.NoError(b, err)
	var with, without time.Duration
	for b.Loop() {
		t0 := time.Now()
		_, err := p.Run(ctx)
		t1 := time.Now()
		_, err2 := q.Run(ctx)
		t2 := time.Now()
		require.NoError(b, err)
		require.NoError(b, err2)
		with += t1.Sub(t0)
		without += t2.Sub(t1)
	}
	b.ReportMetric(float64(with-without)/float64(b.N)/10000, "ns/clockread")
}

// BenchmarkNewInterpreter instantiates a fresh interpreter (and closes it).
func BenchmarkNewInterpreter(b *testing.B) {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(b, err)
	for b.Loop() {
		it, err := e.NewInterpreter(ctx)
		if err != nil {
			b.Fatal(err)
		}
		_ = it.Close(ctx)
	}
}

// BenchmarkPoolGet takes a warm interpreter from a pool and returns it.
func BenchmarkPoolGet(b *testing.B) {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(b, err)
	pool := runtime.NewPool(e, 8)
	defer pool.Close(ctx)
	time.Sleep(200 * time.Millisecond) // let it fill
	for b.Loop() {
		it, err := pool.Get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		pool.Put(it)
	}
}

// BenchmarkREPLDumpLoad1MB dumps a REPL holding about 1 MB of data and
// loads it into another interpreter.
func BenchmarkREPLDumpLoad1MB(b *testing.B) {
	ctx := context.Background()
	src, dst := runtimetest.NewInterp(b), runtimetest.NewInterp(b)
	r, err := src.NewREPL(ctx)
	require.NoError(b, err)
	_, err = r.Run(ctx, benchSource(b, "data_1mb.py"))
	require.NoError(b, err)
	var size int
	for b.Loop() {
		dump, err := r.Dump(ctx)
		if err != nil {
			b.Fatal(err)
		}
		size = len(dump)
		loaded, _, err := dst.LoadREPL(ctx, dump)
		if err != nil {
			b.Fatal(err)
		}
		loaded.Close()
	}
	b.ReportMetric(float64(size), "dump-bytes")
}

// BenchmarkFirstResultFreshProcess starts a new process (this test binary)
// that compiles the module from the warm on-disk cache, runs `1 + 1` and
// exits: the cold start of a serverless function.
func BenchmarkFirstResultFreshProcess(b *testing.B) {
	run := func() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "MONTY_TEST_FIRST_RESULT=1")
		out, err := cmd.CombinedOutput()
		require.NoError(b, err, string(out))
	}
	run() // warm the cache
	for b.Loop() {
		run()
	}
}

// BenchmarkIdleInterpreterMemory reports the resident memory each idle
// interpreter adds (after one tiny run), measured over 50 of them.
func BenchmarkIdleInterpreterMemory(b *testing.B) {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(b, err)
	const n = 50
	// The timer runs (each iteration creates n interpreters), so b.Loop
	// settles on a small iteration count.
	for b.Loop() {
		before := residentBytes(b)
		its := make([]*runtime.Interpreter, 0, n)
		for range n {
			it, err := e.NewInterpreter(ctx)
			require.NoError(b, err)
			_, err = run(b, it, "x = [i for i in range(10)]")
			require.NoError(b, err)
			its = append(its, it)
		}
		after := residentBytes(b)
		b.ReportMetric(float64(after-before)/n, "rss-bytes/interp")
		for _, it := range its {
			_ = it.Close(ctx)
		}
	}
}

// residentBytes reads the process's resident set size from /proc.
func residentBytes(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skipf("resident memory needs /proc: %v", err)
	}
	var size, resident int64
	_, err = fmt.Sscan(string(data), &size, &resident)
	require.NoError(b, err)
	return resident * int64(os.Getpagesize())
}
