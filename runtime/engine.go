package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/monty-go/monty/runtime/internal/modcache"
	"github.com/monty-go/monty/runtime/internal/pages"
	"github.com/monty-go/monty/wasm"
)

// ABIVersion is the request/response protocol version this package speaks;
// a module reporting another version is refused.
const ABIVersion = 1

// ErrEngineClosed is returned by NewInterpreter after the Engine was closed.
var ErrEngineClosed = errors.New("monty: engine is closed")

// Engine holds the compiled interpreter module. Compiling it to machine code
// takes several seconds the first time; the machine code is cached on disk
// (see [DefaultCacheDir]), so later processes load it in a fraction of a
// second. Instantiating an [Interpreter] from an Engine takes about a
// millisecond.
//
// With [WithFastStart], an Engine whose machine code is not cached yet
// starts on wazero's interpreter engine (ready in about a second, code runs
// several times slower) and compiles in the background; interpreters
// created after that compilation run the machine code.
//
// A program that links the module translated to Go ahead of time (it
// imports github.com/monty-go/monty/wasm/aot; see [RegisterAOT]) gets
// engines that run it instead: nothing is compiled or cached, so the cache
// and fast-start options change nothing, and an engine is ready in
// milliseconds. [WithModule] and [WithWazero] keep an engine on wazero.
//
// An Engine is safe for concurrent use.
type Engine struct {
	epoch     time.Time
	version   string // monty version reported by the module
	moduleSum string // the module's SHA-256, hex
	log       *slog.Logger
	// compiled is closed once new interpreters run machine code, or the
	// background compilation failed (compileErr).
	compiled   chan struct{}
	compileErr error
	info       CompileInfo

	latest atomic.Pointer[backend] // cur, readable without the lock

	mu       sync.Mutex
	cur      *backend   // where new interpreters are made
	backends []*backend // open: cur, and earlier ones with live interpreters
	closed   bool
	spare    *Interpreter // an instance for the next NewInterpreter (AOT)
}

// backend is one module new interpreters can be made from, with a count of
// the open interpreters made from it.
type backend struct {
	code module
	live int // open interpreters; guarded by Engine.mu
}

// CompileInfo tells how an Engine got its code ready.
type CompileInfo struct {
	// CacheDir is the cache entry used; "" when no cache was used.
	CacheDir string
	// Cached reports that the machine code was read from the cache.
	Cached bool
	// CacheError says why the cache could not be used or filled (the
	// module was then compiled in memory), nil when it could.
	CacheError error
	// FastStart reports that the engine started on wazero's interpreter
	// engine while compiling in the background (see [WithFastStart]).
	FastStart bool
	// AOT reports that the engine runs the module translated to Go ahead
	// of time (see [RegisterAOT]): nothing was compiled or cached.
	AOT bool
	// Ready is how long NewEngine took.
	Ready time.Duration
}

// EngineOption configures NewEngine.
type EngineOption func(*engineConfig)

type engineConfig struct {
	cacheDir    string
	module      []byte
	memoryPages uint32
	fastStart   bool
	log         *slog.Logger
	tune        func(wazero.RuntimeConfig) wazero.RuntimeConfig // tests only
	wazero      bool
}

// WithCacheDir caches compiled machine code in dir (created if missing)
// instead of [DefaultCacheDir]; "" turns the cache off. A cache directory
// is safe to share between processes and between versions of the module:
// each version has its own entry, and entries not used recently are removed.
// A directory that cannot be written is used if it already holds this
// module's machine code, and otherwise costs a warning and an in-memory
// compilation, never an error.
func WithCacheDir(dir string) EngineOption {
	return func(c *engineConfig) { c.cacheDir = dir }
}

// WithModule replaces the embedded module (for testing other builds).
func WithModule(wasmBytes []byte) EngineOption {
	return func(c *engineConfig) { c.module = wasmBytes }
}

// WithMaxMemoryPages caps each interpreter's linear memory, in 64 KiB pages
// (default 65536: 4 GiB, the wasm32 maximum). Growing past it aborts the
// instance; Limits.MaxMemory is the graceful limit. The translated module
// (see [RegisterAOT]) reserves 8 GiB of address space per interpreter where
// it has guard pages, and growing past the cap fails there as on wazero;
// elsewhere it reserves the cap and ends the instance when a call leaves
// its memory larger (docs/building.md#guard-pages).
func WithMaxMemoryPages(pages uint32) EngineOption {
	return func(c *engineConfig) { c.memoryPages = pages }
}

// WithFastStart makes NewEngine return as soon as wazero's interpreter
// engine has the module (about a second) when the machine code is not
// cached: the first interpreters run on it, several times slower, while
// the machine code is compiled (and cached) in the background; interpreters
// created afterwards run the machine code (see [Engine.Compiled],
// [Interpreter.Outdated]). For long-running processes that must answer
// soon after starting; with a warm cache it changes nothing.
func WithFastStart() EngineOption {
	return func(c *engineConfig) { c.fastStart = true }
}

// WithWazero builds the engine on wazero even when the module translated
// to Go ahead of time is linked (see [RegisterAOT]): to compare the two, or
// to move state between them (a dump loads on either).
func WithWazero() EngineOption {
	return func(c *engineConfig) { c.wazero = true }
}

// WithLogger receives the engine's log records (default: [slog.Default]):
// at Info, compile_start when the module must be compiled (a cache miss),
// compile_done when it is, and fast_start / switched around a fast start;
// at Warn, cache_unusable and cache_damaged when the cache cannot be used;
// at Error, compile_failed when the background compilation fails. Each
// record carries its name in the attribute "event".
func WithLogger(l *slog.Logger) EngineOption {
	return func(c *engineConfig) { c.log = l }
}

// NewEngine compiles the interpreter module, or loads its machine code from
// the cache. Close it to free the machine code; interpreters created from
// it must not be used afterwards.
func NewEngine(ctx context.Context, opts ...EngineOption) (*Engine, error) {
	start := time.Now()
	cfg := engineConfig{cacheDir: DefaultCacheDir(), module: wasm.Module, memoryPages: 65536}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	e := &Engine{epoch: start, log: cfg.log, compiled: make(chan struct{}), moduleSum: moduleHash(cfg.module)}
	if t := registeredAOT.Load(); t != nil && !cfg.wazero && isEmbeddedModule(cfg.module) {
		if err := e.startAOT(ctx, &cfg, t); err != nil {
			return nil, err
		}
		e.info.Ready = time.Since(start)
		return e, nil
	}
	if len(cfg.module) == 0 {
		return nil, ErrModuleNotEmbedded
	}
	var cache *modcache.Entry
	if cfg.cacheDir != "" {
		var err error
		if cache, err = modcache.Open(cfg.cacheDir, e.moduleSum); err != nil {
			e.info.CacheError = err
			e.log.Warn("the compilation cache cannot be used; compiling in memory (set "+CacheDirEnv+" to a writable directory, or to "+CacheOff+")",
				"event", "cache_unusable", "cache_dir", cfg.cacheDir, "error", err)
		}
	}
	if cache != nil {
		e.info.CacheDir, e.info.Cached = cache.Dir, cache.Warm
	}
	var err error
	if cfg.fastStart && !e.info.Cached {
		err = e.fastStart(ctx, &cfg, cache)
	} else {
		var b *backend
		if b, err = e.compile(ctx, &cfg, cache, goruntime.GOMAXPROCS(0)); err == nil {
			e.adopt(b)
		}
		close(e.compiled)
	}
	if err != nil {
		return nil, err
	}
	e.updateInfo(func(i *CompileInfo) { i.Ready = time.Since(start) })
	return e, nil
}

// updateInfo changes e.info under the lock (a background compilation may
// change it while callers read it).
func (e *Engine) updateInfo(f func(*CompileInfo)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(&e.info)
}

// startAOT makes the translated module the engine's backend.
func (e *Engine) startAOT(ctx context.Context, cfg *engineConfig, t *translatedModule) error {
	defer close(e.compiled)
	if t.sha256 != e.moduleSum {
		return fmt.Errorf("monty: the linked AOT module was translated from monty.wasm %.12s, this package embeds %.12s: "+
			"regenerate it (make aot) or use the matching versions", t.sha256, e.moduleSum)
	}
	code := &aotModule{newInstance: t.newInstance, maxBytes: uint64(cfg.memoryPages) << 16}
	it, err := e.check(ctx, code)
	if err != nil {
		return err
	}
	// The checked instance is as good as a new one: the first
	// NewInterpreter takes it (a process that makes one interpreter makes
	// one instance).
	e.spare = it
	e.info.AOT = true
	e.adopt(&backend{code: code})
	return nil
}

// fastStart loads the module on wazero's interpreter engine and compiles
// the machine code in the background, leaving a core for the first
// requests.
func (e *Engine) fastStart(ctx context.Context, cfg *engineConfig, cache *modcache.Entry) error {
	e.info.FastStart = true
	start := time.Now()
	b, err := e.newBackend(ctx, cfg, nil, false, 1)
	if err != nil {
		close(e.compiled)
		return err
	}
	e.adopt(b)
	e.log.Info("interpreter ready on wazero's interpreter engine; compiling machine code in the background",
		"event", "fast_start", "took", time.Since(start).Round(time.Millisecond))
	go func() {
		defer close(e.compiled)
		start := time.Now()
		mb, err := e.compile(context.WithoutCancel(ctx), cfg, cache, max(goruntime.GOMAXPROCS(0)-1, 1))
		if err != nil {
			e.compileErr = err
			e.log.Error("compiling the interpreter failed; it keeps running on wazero's interpreter engine",
				"event", "compile_failed", "error", err)
			return
		}
		if e.adopt(mb) {
			e.log.Info("new interpreters run compiled machine code", "event", "switched", "took", time.Since(start).Round(time.Millisecond))
		}
	}()
	return nil
}

// compile makes a backend with machine code, from the cache when it holds
// it. A damaged or unwritable cache entry is written afresh, else the
// module is compiled in memory.
func (e *Engine) compile(ctx context.Context, cfg *engineConfig, cache *modcache.Entry, workers int) (*backend, error) {
	start := time.Now()
	if cache != nil && !cache.Warm {
		// One process fills an entry at a time; the others wait for it and
		// load what it stored (a killed filler leaves the lock to them).
		unlock, err := cache.Fill(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			e.log.Warn("the compilation cache's lock cannot be taken; compiling without it", "event", "cache_lock", "cache_dir", cache.Dir, "error", err)
		default:
			defer unlock()
			if cache.Warm {
				e.updateInfo(func(i *CompileInfo) { i.Cached = true })
				e.log.Info("another process compiled the interpreter module into the cache meanwhile; loading it",
					"event", "compiled_elsewhere", "cache_dir", cache.Root, "waited", time.Since(start).Round(time.Millisecond))
			}
		}
	}
	switch {
	case cache == nil:
		e.log.Info("compiling the interpreter module to machine code; this takes several seconds, in every process (no cache)",
			"event", "compile_start")
	case !cache.Warm:
		e.log.Info("compiling the interpreter module to machine code; this takes several seconds, once per module version",
			"event", "compile_start", "cache_dir", cache.Root)
	}
	b, err := e.newBackend(ctx, cfg, cache, true, workers)
	if err != nil && cache != nil && ctx.Err() == nil && cacheFault(err, cache) {
		e.log.Warn("the compilation cache entry is damaged or cannot be written; compiling again",
			"event", "cache_damaged", "cache_dir", cache.Dir, "error", err)
		e.updateInfo(func(i *CompileInfo) { i.Cached = false })
		if cerr := cache.Clear(); cerr != nil {
			e.updateInfo(func(i *CompileInfo) { i.CacheError, i.CacheDir = cerr, "" })
			cache = nil
		}
		if b, err = e.newBackend(ctx, cfg, cache, true, workers); err != nil && cache != nil {
			e.updateInfo(func(i *CompileInfo) { i.CacheError, i.CacheDir = err, "" })
			cache = nil
			b, err = e.newBackend(ctx, cfg, nil, true, workers)
		}
	}
	if err != nil {
		return nil, err
	}
	if cache != nil && !cache.Warm {
		if err := cache.MarkReady(); err != nil {
			e.updateInfo(func(i *CompileInfo) { i.CacheError = err })
		}
	}
	if info := e.CompileInfo(); !info.Cached {
		e.log.Info("interpreter module compiled", "event", "compile_done", "took", time.Since(start).Round(time.Millisecond),
			"cache_dir", info.CacheDir)
	}
	if isEmbeddedModule(cfg.module) {
		pages.Release(cfg.module)
	}
	return b, nil
}

// cacheFault reports whether err may come from the cache rather than the
// module: any error reading a warm entry, a file error writing a cold one.
func cacheFault(err error, cache *modcache.Entry) bool {
	var pe *fs.PathError
	return cache.Warm || errors.As(err, &pe)
}

// newBackend compiles the module with wazero (machine code, or wazero's
// interpreter engine) and checks that it is an interpreter module this
// package can speak to.
func (e *Engine) newBackend(ctx context.Context, cfg *engineConfig, cache *modcache.Entry, machine bool, workers int) (*backend, error) {
	code, err := newWazeroModule(ctx, cfg, cache, machine, workers)
	if err != nil {
		return nil, err
	}
	it, err := e.check(ctx, code)
	if err != nil {
		code.close(ctx)
		return nil, err
	}
	_ = it.destroy(ctx)
	return &backend{code: code}, nil
}

// check instantiates the module once to check the protocol version and to
// read the interpreter version, and returns that instance.
func (e *Engine) check(ctx context.Context, code module) (*Interpreter, error) {
	it, err := e.instantiate(ctx, code)
	if err != nil {
		return nil, err
	}
	if err := e.checkVersions(ctx, it); err != nil {
		_ = it.destroy(ctx)
		return nil, err
	}
	return it, nil
}

func (e *Engine) checkVersions(ctx context.Context, it *Interpreter) error {
	abi, err := it.inst.abiVersion(ctx)
	if err != nil {
		return fmt.Errorf("monty: read ABI version: %w", err)
	}
	if abi != ABIVersion {
		return fmt.Errorf("monty: module speaks ABI version %d, this package speaks %d: rebuild the module (make wasm) or update the package", abi, ABIVersion)
	}
	version, err := it.info(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.version == "" {
		e.version = version
	} else if version != e.version {
		return fmt.Errorf("monty: module reports monty %s, expected %s", version, e.version)
	}
	return nil
}

// adopt makes b the backend of new interpreters, closing the previous one
// if no interpreter uses it. It reports false (and closes b) when the
// engine was closed meanwhile.
func (e *Engine) adopt(b *backend) bool {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		b.code.close(context.Background())
		return false
	}
	old := e.cur
	e.cur = b
	e.latest.Store(b)
	e.backends = append(e.backends, b)
	idle := old != nil && old.live == 0
	if idle {
		e.forget(old)
	}
	e.mu.Unlock()
	if idle {
		old.code.close(context.Background())
	}
	return true
}

// acquire returns the backend for a new interpreter and counts it, with
// the spare instance if there is one.
func (e *Engine) acquire() (*backend, *Interpreter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, nil, ErrEngineClosed
	}
	e.cur.live++
	spare := e.spare
	e.spare = nil
	return e.cur, spare, nil
}

// release uncounts an interpreter of b, closing b when it was the last one
// of a backend new interpreters no longer use.
func (e *Engine) release(b *backend) {
	e.mu.Lock()
	b.live--
	idle := b.live == 0 && b != e.cur && !e.closed
	if idle {
		e.forget(b)
	}
	e.mu.Unlock()
	if idle {
		b.code.close(context.Background())
	}
}

// forget drops b from the open backends; e.mu is held.
func (e *Engine) forget(b *backend) {
	for i, x := range e.backends {
		if x == b {
			e.backends = append(e.backends[:i], e.backends[i+1:]...)
			return
		}
	}
}

// current is the backend new interpreters are made from.
func (e *Engine) current() *backend { return e.latest.Load() }

// MontyVersion is the version of the monty crate the module was built from.
func (e *Engine) MontyVersion() string { return e.version }

// ModuleSHA256 is the SHA-256, in hex, of the module the engine runs:
// wasm.SHA256 for the embedded one, the hash of the bytes given to
// [WithModule] otherwise. It identifies the build that writes a dump.
func (e *Engine) ModuleSHA256() string { return e.moduleSum }

// CompileInfo tells where the engine's code came from and how long it took.
func (e *Engine) CompileInfo() CompileInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info
}

// Compiled reports whether new interpreters run compiled machine code:
// always, except during a fast start (see [WithFastStart]).
func (e *Engine) Compiled() bool {
	return e.current().code.machine()
}

// WaitCompiled waits until new interpreters run compiled machine code (see
// [WithFastStart]). It returns the background compilation's error if it
// failed, or ctx's error.
func (e *Engine) WaitCompiled(ctx context.Context) error {
	select {
	case <-e.compiled:
		return e.compileErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close releases the compiled module and every interpreter made from it. A
// background compilation still running finishes on its own and is
// discarded.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	backends, spare := e.backends, e.spare
	e.backends, e.spare = nil, nil
	e.mu.Unlock()
	if spare != nil {
		_ = spare.destroy(ctx)
	}
	for _, b := range backends {
		b.code.close(ctx)
	}
	return nil
}

var defaultEngine struct {
	once sync.Once
	e    *Engine
	err  error
}

// Default returns the process-wide engine, compiling the module on first use
// (concurrent callers wait for the same compilation), with the machine code
// cached in [DefaultCacheDir].
func Default(ctx context.Context) (*Engine, error) {
	defaultEngine.once.Do(func() {
		defaultEngine.e, defaultEngine.err = NewEngine(context.WithoutCancel(ctx))
	})
	return defaultEngine.e, defaultEngine.err
}

// Precompile compiles the default engine now rather than on first use, for
// example at program start or while building a deployment image (the
// machine code lands in [DefaultCacheDir]).
func Precompile(ctx context.Context) error {
	_, err := Default(ctx)
	return err
}
