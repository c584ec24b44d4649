package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// events records the "event" attribute of every log record an engine
// writes.
type events struct {
	mu   sync.Mutex
	seen []string
}

func (ev *events) Enabled(context.Context, slog.Level) bool { return true }
func (ev *events) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "event" {
			ev.mu.Lock()
			ev.seen = append(ev.seen, a.Value.String())
			ev.mu.Unlock()
		}
		return true
	})
	return nil
}
func (ev *events) WithAttrs([]slog.Attr) slog.Handler { return ev }
func (ev *events) WithGroup(string) slog.Handler      { return ev }

func (ev *events) list() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]string(nil), ev.seen...)
}

// newLoggedEngine makes a wazero engine (the compilation and its cache are
// what these tests are about) whose log events land in ev.
func newLoggedEngine(t *testing.T, ev *events, opts ...runtime.EngineOption) *runtime.Engine {
	t.Helper()
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, append(opts, runtime.WithWazero(), runtime.WithLogger(slog.New(ev)))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(ctx) })
	return e
}

// onePlusOne runs 1 + 1 in a new interpreter of e.
func onePlusOne(t *testing.T, e *runtime.Engine) *runtime.Interpreter {
	t.Helper()
	ctx := context.Background()
	it, err := e.NewInterpreter(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = it.Close(ctx) })
	v, err := run(t, it, "1 + 1")
	require.NoError(t, err)
	require.Equal(t, object.Value(object.Int(2)), v)
	return it
}

// entryFiles lists the files of wazero's cache inside the module's entry.
func entryFiles(t *testing.T, entry string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(entry, "wazero-*", "*"))
	require.NoError(t, err)
	return files
}

// TestCacheFillReuseRepairPrune: two engines fill an empty cache at once;
// the next engine reads it; a damaged entry is compiled again and written
// afresh; entries of other module versions beyond the most recently used
// are removed, directories that are not entries are left alone. (A small
// stand-in module keeps the compilations short; the real one goes through
// the same cache in every other test.)
func TestCacheFillReuseRepairPrune(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	old := func(name string, age time.Duration, ready bool) string {
		dir := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		stamp := dir
		if ready {
			stamp = filepath.Join(dir, "ready")
			require.NoError(t, os.WriteFile(stamp, []byte("x"), 0o600))
		}
		require.NoError(t, os.Chtimes(stamp, now.Add(-age), now.Add(-age)))
		return dir
	}
	// Six entries are kept: this module's and the five used last.
	kept := []string{old("something-else", 100*time.Hour, false)}
	for i := range 5 {
		kept = append(kept, old(fmt.Sprintf("module-000000000000000%d-v0-linux-amd64", i), time.Duration(i+1)*time.Hour, i != 2))
	}
	stale := old("module-0000000000000006-v0-linux-amd64", 6*time.Hour, true)
	abandoned := old("module-0000000000000007-v0-linux-amd64", 7*time.Hour, false)
	module := standInModule()
	opts := []runtime.EngineOption{runtime.WithModule(module), runtime.WithCacheDir(root)}

	var wg sync.WaitGroup
	engines := make([]*runtime.Engine, 2)
	for i := range engines {
		wg.Go(func() { engines[i] = newLoggedEngine(t, &events{}, opts...) })
	}
	wg.Wait()
	entry := engines[0].CompileInfo().CacheDir
	require.True(t, strings.HasPrefix(filepath.Base(entry), "module-"), entry)
	assert.Equal(t, entry, engines[1].CompileInfo().CacheDir)
	assert.FileExists(t, filepath.Join(entry, "ready"))
	require.Len(t, entryFiles(t, entry), 1, "one machine-code file, no temporary files left")
	for _, dir := range kept {
		assert.DirExists(t, dir)
	}
	for _, dir := range []string{stale, abandoned} {
		assert.NoDirExists(t, dir)
	}

	ev := &events{}
	e := newLoggedEngine(t, ev, opts...)
	info := e.CompileInfo()
	assert.True(t, info.Cached)
	assert.NoError(t, info.CacheError)
	assert.NotContains(t, ev.list(), "compile_start")
	assert.Equal(t, "stand-in", e.MontyVersion())

	file := entryFiles(t, entry)[0]
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	for i := len(data) / 2; i < len(data); i++ {
		data[i] ^= 0xff
	}
	require.NoError(t, os.WriteFile(file, data, 0o600))
	ev = &events{}
	e = newLoggedEngine(t, ev, opts...)
	assert.Contains(t, ev.list(), "cache_damaged")
	assert.False(t, e.CompileInfo().Cached)
	assert.NoError(t, e.CompileInfo().CacheError)
	e = newLoggedEngine(t, &events{}, opts...)
	assert.True(t, e.CompileInfo().Cached, "the entry was written again")
}

// TestCacheUnusable: a cache directory that cannot be created costs a
// warning and an in-memory compilation, never an error.
func TestCacheUnusable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	ev := &events{}
	e := newLoggedEngine(t, ev, runtime.WithModule(standInModule()), runtime.WithCacheDir(filepath.Join(blocker, "cache")))
	info := e.CompileInfo()
	assert.Error(t, info.CacheError)
	assert.Empty(t, info.CacheDir)
	assert.False(t, info.Cached)
	assert.Equal(t, []string{"cache_unusable", "compile_start", "compile_done"}, ev.list())
}

// standInModule is a minimal module speaking just enough of the protocol
// for NewEngine: monty_abi_version answers 1 and every monty_call answers
// OK with the version "stand-in".
func standInModule() []byte {
	section := func(id byte, content ...[]byte) []byte {
		body := bytes.Join(content, nil)
		return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
	}
	name := func(s string) []byte { return append(uleb(uint64(len(s))), s...) }
	function := func(code ...byte) []byte {
		body := append(append([]byte{0}, code...), 0x0b) // no locals; code; end
		return append(uleb(uint64(len(body))), body...)
	}
	const respAt, reqAt = 1024, 2048
	resp := append([]byte{0x82, 0x00, 0x82, 0x60 | 8}, "stand-in"...) // [0, ["stand-in", 0]]
	resp = append(resp, 0x00)
	return bytes.Join([][]byte{
		{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00},
		section(1, []byte{4, // types
			0x60, 0, 1, 0x7f, // () -> i32
			0x60, 1, 0x7f, 1, 0x7f, // (i32) -> i32
			0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7e, // (i32, i32, i32) -> i64
			0x60, 0, 0}), // () -> ()
		section(3, []byte{4, 0, 1, 2, 3}),
		section(5, []byte{1, 0, 1}), // one memory of one page
		section(7, []byte{5},
			name("memory"), []byte{2, 0},
			name("monty_abi_version"), []byte{0, 0},
			name("monty_reserve"), []byte{0, 1},
			name("monty_call"), []byte{0, 2},
			name("monty_release"), []byte{0, 3}),
		section(10, []byte{4},
			function(append([]byte{0x41}, sleb(1)...)...),
			function(append([]byte{0x41}, sleb(reqAt)...)...),
			function(append([]byte{0x42}, sleb(respAt<<32|int64(len(resp)))...)...),
			function()),
		section(11, []byte{1, 0, 0x41}, sleb(respAt), []byte{0x0b}, uleb(uint64(len(resp))), resp),
	}, nil)
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// TestEngineClosed: NewInterpreter after Close is an error, not a panic.
func TestEngineClosed(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx)
	require.NoError(t, err)
	it := onePlusOne(t, e)
	require.NoError(t, e.Close(ctx))
	_, err = e.NewInterpreter(ctx)
	require.ErrorIs(t, err, runtime.ErrEngineClosed)
	require.NoError(t, it.Close(ctx))
}

// TestDefaultCacheDir: MONTY_CACHE_DIR chooses the directory, "off" turns
// the cache off, and the default lives in the user's cache directory.
func TestDefaultCacheDir(t *testing.T) {
	t.Setenv(runtime.CacheDirEnv, "/some/dir")
	assert.Equal(t, "/some/dir", runtime.DefaultCacheDir())
	t.Setenv(runtime.CacheDirEnv, "OFF")
	assert.Empty(t, runtime.DefaultCacheDir())
	t.Setenv(runtime.CacheDirEnv, "")
	base, err := os.UserCacheDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(base, "monty-go", "compiled"), runtime.DefaultCacheDir())
	if goruntime.GOOS == "linux" {
		// An empty environment (how pydantic-monty starts its workers): the
		// home directory comes from the user database.
		u, err := user.Current()
		require.NoError(t, err)
		t.Setenv("HOME", "")
		t.Setenv("XDG_CACHE_HOME", "")
		assert.Equal(t, filepath.Join(u.HomeDir, ".cache", "monty-go", "compiled"), runtime.DefaultCacheDir())
	}
}

// TestPinnedWazeroVersion: the version test binaries put in the cache key
// (they carry no build information) is the one go.mod requires.
func TestPinnedWazeroVersion(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	assert.Contains(t, string(gomod), "github.com/tetratelabs/wazero "+runtime.PinnedWazeroVersion+"\n")
}
