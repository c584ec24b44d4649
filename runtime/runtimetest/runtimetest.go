// Package runtimetest helps test code built on package runtime: it gives
// interpreters of the default engine, runs code under a Host and names the
// Python exception a run raised; and it prepares compilation caches in
// which an engine's compilation is quick, or, for a fast start
// (runtime.WithFastStart), finishes exactly when the test says so. The machine code comes from runtime.Default's cache (a wazero
// engine's on the same cache when the module translated to Go is linked),
// which must be on.
package runtimetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// NewInterp returns a fresh interpreter from the shared default engine,
// closed when the test ends.
func NewInterp(t testing.TB) *runtime.Interpreter {
	t.Helper()
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(t, err)
	it, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = it.Close(ctx) })
	return it
}

// HostRun compiles code in it and runs it under h.
func HostRun(t testing.TB, it *runtime.Interpreter, h *runtime.Host, code string, opts ...runtime.CompileOption) (object.Value, error) {
	t.Helper()
	p, err := it.Compile(context.Background(), code, opts...)
	require.NoError(t, err)
	defer p.Close()
	return h.Run(context.Background(), p)
}

// PyErr is the Python exception a run raised, as "Type: message".
func PyErr(t testing.TB, err error) string {
	t.Helper()
	var pe *runtime.Error
	require.ErrorAs(t, err, &pe)
	return pe.Type + ": " + pe.Message
}

// PyErrType is the type of the Python exception a run raised.
func PyErrType(t testing.TB, err error) string {
	t.Helper()
	var pe *runtime.Error
	require.ErrorAs(t, err, &pe)
	return pe.Type
}

// GatedCache returns a cache directory (for runtime.WithCacheDir) in which
// the embedded module's machine code is not yet complete: an engine made
// with runtime.WithFastStart starts on wazero's interpreter engine, and its
// background compilation finishes only after release is called (which
// waits for it to start reading). Where the gate cannot be built (no named
// pipes), the directory is empty and the background compilation is a real
// one, which release does not wait for.
func GatedCache(t testing.TB) (dir string, release func()) {
	t.Helper()
	dir, files := entry(t)
	return dir, pipes(t, files)
}

// UnfinishedCache returns a cache directory whose entry holds the embedded
// module's machine code without the mark that it is complete (as after a
// crash between the two): an engine using it goes through a compilation
// (a cache miss) that takes a fraction of a second, and marks the entry.
func UnfinishedCache(t testing.TB) string {
	t.Helper()
	dir, files := entry(t)
	for dst, src := range files {
		code, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(dst, code, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// entry returns a new cache directory and, for each machine-code file in
// the default cache's entry (one per engine configuration that was used),
// the path it would have in the new one (directories created).
func entry(t testing.TB) (dir string, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	def, err := runtime.Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if def.CompileInfo().AOT {
		// The default engine runs the module translated to Go: the machine
		// code is that of a wazero engine on the same cache.
		if def, err = runtime.NewEngine(ctx, runtime.WithWazero()); err != nil {
			t.Fatal(err)
		}
		defer def.Close(ctx)
	}
	dir = t.TempDir()
	from := def.CompileInfo().CacheDir
	if from == "" {
		t.Fatalf("runtimetest: the compilation cache is off (%s=%s)", runtime.CacheDirEnv, os.Getenv(runtime.CacheDirEnv))
	}
	found, err := filepath.Glob(filepath.Join(from, "wazero-*", "*"))
	if err != nil || len(found) == 0 {
		t.Fatalf("runtimetest: no machine code in %s (%v)", from, err)
	}
	files = map[string]string{}
	for _, src := range found {
		rel, err := filepath.Rel(from, src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(from), rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			t.Fatal(err)
		}
		files[dst] = src
	}
	return dir, files
}
