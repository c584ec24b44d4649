package runtime_test

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	_ "github.com/monty-go/monty/wasm/aot"
)

// scripts/aotgo.sh adds this file to runtime's tests (make test-aot): the
// test binary then links the module translated to Go, so every engine of
// the other tests runs it; the tests here check what differs, and that
// state moves between the engines.

// TestAOTEngine: an engine runs the translated module and compiles and
// caches nothing; WithWazero and WithModule keep an engine on wazero.
func TestAOTEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := runtime.NewEngine(ctx, runtime.WithCacheDir(dir), runtime.WithFastStart())
	require.NoError(t, err)
	defer e.Close(ctx)
	info := e.CompileInfo()
	assert.True(t, info.AOT)
	assert.False(t, info.Cached)
	assert.False(t, info.FastStart, "nothing to start fast: the code is linked")
	assert.Empty(t, info.CacheDir)
	assert.True(t, e.Compiled())
	require.NoError(t, e.WaitCompiled(ctx))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is cached")
	it, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	defer it.Close(ctx)
	assert.True(t, it.Compiled())
	v, err := run(t, it, "sum(range(10))")
	require.NoError(t, err)
	assert.Equal(t, object.Int(45), v)

	w, err := runtime.NewEngine(ctx, runtime.WithWazero())
	require.NoError(t, err)
	defer w.Close(ctx)
	assert.False(t, w.CompileInfo().AOT)
	assert.Equal(t, e.MontyVersion(), w.MontyVersion())
	assert.Equal(t, e.ModuleSHA256(), w.ModuleSHA256())
}

// TestAOTRefusesAnotherModule: a translation registered for another
// monty.wasm than the embedded one is refused, with what to do.
func TestAOTRefusesAnotherModule(t *testing.T) {
	ctx := context.Background()
	restore := runtime.RegisterAOTFrom("0123456789abcdef")
	defer restore()
	_, err := runtime.NewEngine(ctx)
	require.ErrorContains(t, err, "make aot")
}

// TestDumpsMoveBetweenEngines: a REPL and a paused run dumped on one
// engine load and continue on the other, both ways.
func TestDumpsMoveBetweenEngines(t *testing.T) {
	ctx := context.Background()
	aot, err := runtime.NewEngine(ctx)
	require.NoError(t, err)
	defer aot.Close(ctx)
	wz, err := runtime.NewEngine(ctx, runtime.WithWazero())
	require.NoError(t, err)
	defer wz.Close(ctx)
	engines := map[string]*runtime.Engine{"aot": aot, "wazero": wz}
	for _, dir := range [][2]string{{"aot", "wazero"}, {"wazero", "aot"}} {
		t.Run(dir[0]+"_to_"+dir[1], func(t *testing.T) {
			from, err := engines[dir[0]].NewInterpreter(ctx)
			require.NoError(t, err)
			defer from.Close(ctx)
			to, err := engines[dir[1]].NewInterpreter(ctx)
			require.NoError(t, err)
			defer to.Close(ctx)

			r, err := from.NewREPL(ctx)
			require.NoError(t, err)
			_, err = r.Run(ctx, "def make(k):\n    def add(v):\n        return v + k\n    return add\n"+
				"add5 = make(5)\nwords = {w: len(w) for w in 'a bb ccc'.split()}\nbig = 'x' * 100000")
			require.NoError(t, err)
			dump, err := r.Dump(ctx)
			require.NoError(t, err)
			moved, pending, err := to.LoadREPL(ctx, dump)
			require.NoError(t, err)
			assert.Nil(t, pending)
			v, err := moved.Run(ctx, "add5(words['ccc']) + len(big)")
			require.NoError(t, err)
			assert.Equal(t, object.Int(100008), v)

			p, err := from.Compile(ctx, "total = 0\nfor i in range(3):\n    total += ask(i)\ntotal")
			require.NoError(t, err)
			ex, err := p.Start(ctx)
			require.NoError(t, err)
			require.NoError(t, ex.Resume(ctx, runtime.Return(object.Int(10))))
			paused, err := ex.Dump(ctx)
			require.NoError(t, err)
			cont, err := to.LoadExecution(ctx, paused)
			require.NoError(t, err)
			require.NoError(t, cont.Resume(ctx, runtime.Return(object.Int(20))))
			require.NoError(t, cont.Resume(ctx, runtime.Return(object.Int(30))))
			assert.Equal(t, object.Int(60), cont.Value())
		})
	}
}

// TestAOTMemoryOffTheGoHeap: a new interpreter's linear memory (10 MB
// when the module starts) lives in the engine's reservation, not on the Go
// heap: the translated New takes it from the engine (scripts/aot.sh's edit),
// so making interpreters allocates little Go memory, and they stay usable
// after growing.
func TestAOTMemoryOffTheGoHeap(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx)
	require.NoError(t, err)
	defer e.Close(ctx)
	warm, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	require.NoError(t, warm.Close(ctx))

	// The least of three rounds, so that a goroutine another test left
	// allocating cannot fail this one; the old translation allocated
	// 10.4 MB per interpreter.
	const n = 4
	var its []*runtime.Interpreter
	perInterpreter := uint64(1 << 62)
	for range 3 {
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		for range n {
			it, err := e.NewInterpreter(ctx)
			require.NoError(t, err)
			its = append(its, it)
		}
		goruntime.ReadMemStats(&after)
		perInterpreter = min(perInterpreter, (after.TotalAlloc-before.TotalAlloc)/n)
	}
	t.Logf("Go heap allocated per new interpreter: %d bytes", perInterpreter)
	assert.Less(t, perInterpreter, uint64(2<<20),
		"a new interpreter allocated %d bytes on the Go heap: its linear memory is not the engine's reservation", perInterpreter)
	for i, it := range its {
		v, err := run(t, it, fmt.Sprintf("s = 'x' * 20_000_000\nlen(s) + %d", i))
		require.NoError(t, err)
		assert.Equal(t, object.Int(20_000_000+i), v)
		require.NoError(t, it.Close(ctx))
	}
}

// TestAOTGuardPages: on linux/amd64 and linux/arm64 the translated
// interpreter runs on guard pages (docs/building.md#guard-pages): each
// interpreter reserves 8 GiB of address space.
func TestAOTGuardPages(t *testing.T) {
	if goruntime.GOOS != "linux" || (goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64") {
		t.Skip("guard pages are checked on linux/amd64 and linux/arm64")
	}
	ctx := context.Background()
	vmSize := func() int64 {
		b, err := os.ReadFile("/proc/self/status")
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				require.NoError(t, err)
				return kb << 10
			}
		}
		t.Fatal("no VmSize in /proc/self/status")
		return 0
	}
	before := vmSize()
	// An engine of its own: its pool's interpreters are all this test's.
	e, err := runtime.NewEngine(ctx)
	require.NoError(t, err)
	it, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	during := vmSize()
	v, err := run(t, it, "len([i for i in range(100_000)])")
	require.NoError(t, err)
	assert.Equal(t, object.Int(100_000), v)
	require.NoError(t, it.Close(ctx))
	require.NoError(t, e.Close(ctx))
	// Given back on close is runtime's TestStrayReservation: here another
	// test's engine could be making an interpreter meanwhile.
	t.Logf("VmSize: +%d MiB with an engine and an interpreter, %+d MiB once both are closed",
		(during-before)>>20, (vmSize()-before)>>20)
	assert.GreaterOrEqual(t, during-before, int64(8<<30), "the interpreter has no guard pages")
}
