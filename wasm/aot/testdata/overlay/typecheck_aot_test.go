package typecheck_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	_ "github.com/monty-go/monty/wasm/aot/checker"
)

// scripts/aotgo.sh adds this file to runtime/typecheck's tests (make
// test-aot): the test binary then links the checker translated to Go, so
// every Checker of the other tests runs it; the tests here check what
// differs, and that both engines find the same.

// TestAOTChecker: a Checker runs the translated module and compiles and
// caches nothing; WithWazero keeps one on wazero.
func TestAOTChecker(t *testing.T) {
	ctx := context.Background()
	require.True(t, typecheck.AOTLinked())
	dir := t.TempDir()
	c, err := typecheck.New(ctx, typecheck.WithCacheDir(dir))
	require.NoError(t, err)
	defer c.Close(ctx)
	info := c.CompileInfo()
	assert.True(t, info.AOT)
	assert.False(t, info.Cached)
	assert.Empty(t, info.CacheDir)
	res, err := c.Check(ctx, typecheck.Request{Code: badCall})
	require.NoError(t, err)
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, "invalid-argument-type", res.Diagnostics[0].Rule)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is cached")

	w, err := typecheck.New(ctx, typecheck.WithWazero(), typecheck.WithCacheDir(""))
	require.NoError(t, err)
	defer w.Close(ctx)
	assert.False(t, w.CompileInfo().AOT)
	assert.Equal(t, c.MontyVersion(), w.MontyVersion())
}

// TestAOTSameDiagnostics: both engines render the same diagnostics, in
// every format, for the same code and stubs.
func TestAOTSameDiagnostics(t *testing.T) {
	ctx := context.Background()
	aot := checker(t)
	require.True(t, aot.CompileInfo().AOT)
	wz, err := typecheck.New(ctx, typecheck.WithWazero())
	require.NoError(t, err)
	defer wz.Close(ctx)
	reqs := []typecheck.Request{
		{Code: badCall},
		{Code: "import sys\nx: int = 'a'\nundefined_name\n", Format: typecheck.Concise},
		{Code: "def f(x: int) -> str:\n    return x\n", Format: typecheck.JSON},
		{Code: "fetch('a', 1)\n", Stubs: "def fetch(url: str, n: str) -> str: ...\n", Format: typecheck.Full},
		{Code: "x = (\n", Format: typecheck.GitLab},
		{Code: "print(1)\n"},
	}
	for _, req := range reqs {
		got, err := aot.Check(ctx, req)
		require.NoError(t, err)
		want, err := wz.Check(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, want.Text, got.Text, "%q", req.Code)
		assert.Equal(t, want.Diagnostics, got.Diagnostics, "%q", req.Code)
	}
}

// TestAOTStopsARunningCheck: a check that runs past its time limit, or
// whose context is cancelled while it runs, is stopped where it is (the
// translated code cannot look at the context: its memory is taken away),
// promptly, and the Checker goes on working.
func TestAOTStopsARunningCheck(t *testing.T) {
	ctx := context.Background()
	c := checker(t)
	slow := strings.Repeat("def f(x: int) -> int:\n    return [x for _ in range(3)][0] + 1\nf(1)\n", 20000)
	start := time.Now()
	_, err := c.Check(ctx, typecheck.Request{Code: slow, Path: "slow.py", Limits: runtime.Limits{MaxDuration: 50 * time.Millisecond}})
	require.ErrorIs(t, err, runtime.ErrTimeLimit)
	assert.Less(t, time.Since(start), 20*time.Second, "the check was not stopped")

	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err = c.Check(cctx, typecheck.Request{Code: slow, Path: "slow.py"})
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	wg.Wait()
	require.ErrorIs(t, err, runtime.ErrCancelled)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, check(t, typecheck.Request{Code: "print(1)\n"}).Clean())
}

// TestAOTMemoryCap: a check's linear memory cannot grow past the
// Checker's cap (the translated memory.grow fails there, as wazero's
// does), and the Checker goes on working.
func TestAOTMemoryCap(t *testing.T) {
	ctx := context.Background()
	c, err := typecheck.New(ctx, typecheck.WithMaxMemoryPages(400)) // 25 MiB
	require.NoError(t, err)
	defer c.Close(ctx)
	require.True(t, c.CompileInfo().AOT)
	code := strings.Repeat("x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n", 200_000)
	_, err = c.Check(ctx, typecheck.Request{Code: code})
	require.Error(t, err)
	assert.True(t, runtime.LimitOf(err) == runtime.MemoryLimit || strings.Contains(err.Error(), "crashed"), "%v", err)
	res, err := c.Check(ctx, typecheck.Request{Code: "print(1)\n"})
	require.NoError(t, err)
	assert.True(t, res.Clean())
}
