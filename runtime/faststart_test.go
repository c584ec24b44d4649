package runtime_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// TestFastStart: with WithFastStart and the machine code not cached, the
// engine is ready on wazero's interpreter engine, switches new interpreters
// to machine code once compiled, keeps the earlier ones working, and its
// pool stops handing them out.
func TestFastStart(t *testing.T) {
	dir, release := runtimetest.GatedCache(t)
	ev := &events{}
	e := newLoggedEngine(t, ev, runtime.WithFastStart(), runtime.WithCacheDir(dir))
	info := e.CompileInfo()
	assert.True(t, info.FastStart)
	assert.False(t, info.Cached)
	assert.Contains(t, ev.list(), "fast_start")
	assert.False(t, e.Compiled())

	ctx := context.Background()
	pool := runtime.NewPool(e, 2)
	t.Cleanup(func() { pool.Close(ctx) })
	early := onePlusOne(t, e)
	assert.False(t, early.Compiled(), "the first interpreter runs on the interpreter engine")
	assert.False(t, early.Outdated())

	release()
	require.NoError(t, e.WaitCompiled(ctx))
	assert.True(t, early.Outdated())
	assert.True(t, e.Compiled())
	assert.Contains(t, ev.list(), "switched")
	assert.FileExists(t, filepath.Join(e.CompileInfo().CacheDir, "ready"))

	later := onePlusOne(t, e)
	assert.True(t, later.Compiled())
	assert.False(t, later.Outdated())
	v, err := run(t, early, "sum(range(10))")
	require.NoError(t, err)
	assert.Equal(t, object.Value(object.Int(45)), v, "the early interpreter still works")
	for range 3 {
		it, err := pool.Get(ctx)
		require.NoError(t, err)
		assert.True(t, it.Compiled(), "the pool hands out compiled interpreters only")
		pool.Put(it)
	}
}
