//go:build unix

package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// TestFastStart: with WithFastStart and the machine code not cached, the
// engine is ready on wazero's interpreter engine, switches new interpreters
// to machine code once compiled, keeps the earlier ones working, and its
// pool stops handing them out.
func TestFastStart(t *testing.T) {
	dir, release := gatedCache(t)
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

// gatedCache returns a cache directory whose entry for the embedded module
// is not marked complete and whose machine-code file is a named pipe: a
// fast-starting engine's background compilation blocks reading it until
// release feeds it the default engine's machine code, so the test decides
// when the switch happens. (When the default cache is off, the directory is
// empty and the background compilation is a real one.)
func gatedCache(t *testing.T) (dir string, release func()) {
	t.Helper()
	def, err := runtime.Default(context.Background())
	require.NoError(t, err)
	dir = t.TempDir()
	src := def.CompileInfo().CacheDir
	if src == "" {
		return dir, func() {}
	}
	files, err := filepath.Glob(filepath.Join(src, "wazero-*", "*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	code, err := os.ReadFile(files[0])
	require.NoError(t, err)
	rel, err := filepath.Rel(src, files[0])
	require.NoError(t, err)
	pipe := filepath.Join(dir, filepath.Base(src), rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(pipe), 0o700))
	require.NoError(t, syscall.Mkfifo(pipe, 0o600))
	// Opening the write end waits for the reader. A test that fails before
	// releasing leaves the background compilation blocked (nothing else).
	return dir, func() {
		f, err := os.OpenFile(pipe, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(code)
			err = errors.Join(err, f.Close())
		}
		require.NoError(t, err)
	}
}
