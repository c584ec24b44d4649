package runtime

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/monty-go/monty/wasm"
)

// ABIVersion is the request/response protocol version this package speaks;
// a module reporting another version is refused.
const ABIVersion = 1

// CacheDirEnv names the environment variable that, when set, gives the
// default engine an on-disk compilation cache (see [WithCacheDir]).
const CacheDirEnv = "MONTY_CACHE_DIR"

// Engine holds the compiled interpreter module. Compiling takes a few
// seconds (much less with a warm cache); instantiating an [Interpreter] from
// an Engine takes about a millisecond. An Engine is safe for concurrent use.
type Engine struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	epoch    time.Time
	version  string // monty version reported by the module
	// instances maps module instances to their Interpreter for host imports.
	instances sync.Map
}

// EngineOption configures NewEngine.
type EngineOption func(*engineConfig)

type engineConfig struct {
	cacheDir    string
	module      []byte
	memoryPages uint32
	tune        func(wazero.RuntimeConfig) wazero.RuntimeConfig // tests only
}

// WithCacheDir stores compiled machine code in dir (created if missing), so
// later processes skip compilation. Safe to share between processes.
func WithCacheDir(dir string) EngineOption {
	return func(c *engineConfig) { c.cacheDir = dir }
}

// WithModule replaces the embedded module (for testing other builds).
func WithModule(wasmBytes []byte) EngineOption {
	return func(c *engineConfig) { c.module = wasmBytes }
}

// WithMaxMemoryPages caps each interpreter's linear memory, in 64 KiB pages
// (default 65536: 4 GiB, the wasm32 maximum). Growing past it aborts the
// instance; Limits.MaxMemory is the graceful limit.
func WithMaxMemoryPages(pages uint32) EngineOption {
	return func(c *engineConfig) { c.memoryPages = pages }
}

// NewEngine compiles the interpreter module. Close it to free the machine
// code; interpreters created from it must not be used afterwards.
func NewEngine(ctx context.Context, opts ...EngineOption) (*Engine, error) {
	cfg := engineConfig{module: wasm.Module, memoryPages: 65536}
	for _, o := range opts {
		o(&cfg)
	}
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(cfg.memoryPages)
	if cfg.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("monty: compilation cache %s: %w", cfg.cacheDir, err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	if cfg.tune != nil {
		rc = cfg.tune(rc)
	}
	e := &Engine{rt: wazero.NewRuntimeWithConfig(ctx, rc), epoch: time.Now()}
	if err := e.init(ctx, cfg.module); err != nil {
		_ = e.rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (e *Engine) init(ctx context.Context, module []byte) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		return fmt.Errorf("monty: instantiate WASI: %w", err)
	}
	_, err := e.rt.NewHostModuleBuilder("monty").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(e.hostPrint),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		WithParameterNames("stream", "ptr", "len").
		Export("print").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("monty: host module: %w", err)
	}
	e.compiled, err = e.rt.CompileModule(ctx, module)
	if err != nil {
		return fmt.Errorf("monty: compile module: %w", err)
	}
	for _, name := range []string{"monty_abi_version", "monty_reserve", "monty_call", "monty_release"} {
		if _, ok := e.compiled.ExportedFunctions()[name]; !ok {
			return fmt.Errorf("monty: module does not export %s: not a monty-go interpreter module", name)
		}
	}
	// One throwaway instance checks the protocol version and reads the
	// interpreter version.
	it, err := e.NewInterpreter(ctx)
	if err != nil {
		return err
	}
	defer it.Close(ctx)
	abi, err := it.fnABI.Call(ctx)
	if err != nil {
		return fmt.Errorf("monty: read ABI version: %w", err)
	}
	if abi[0] != ABIVersion {
		return fmt.Errorf("monty: module speaks ABI version %d, this package speaks %d: rebuild the module (make wasm) or update the package", abi[0], ABIVersion)
	}
	e.version, err = it.info(ctx)
	return err
}

// MontyVersion is the version of the monty crate the module was built from.
func (e *Engine) MontyVersion() string { return e.version }

// Close releases the compiled module and every interpreter made from it.
func (e *Engine) Close(ctx context.Context) error {
	return e.rt.Close(ctx)
}

var defaultEngine struct {
	once sync.Once
	e    *Engine
	err  error
}

// Default returns the process-wide engine, compiling the module on first use
// (concurrent callers wait for the same compilation). When the environment
// variable MONTY_CACHE_DIR is set, compiled code is cached there.
func Default(ctx context.Context) (*Engine, error) {
	defaultEngine.once.Do(func() {
		var opts []EngineOption
		if dir := os.Getenv(CacheDirEnv); dir != "" {
			opts = append(opts, WithCacheDir(dir))
		}
		defaultEngine.e, defaultEngine.err = NewEngine(context.WithoutCancel(ctx), opts...)
	})
	return defaultEngine.e, defaultEngine.err
}

// Precompile compiles the default engine now rather than on first use, for
// example at program start or while building a deployment image (with
// MONTY_CACHE_DIR set, the result lands in the cache).
func Precompile(ctx context.Context) error {
	_, err := Default(ctx)
	return err
}

// hostPrint is the module's `monty.print(stream, ptr, len) -> status` import.
func (e *Engine) hostPrint(ctx context.Context, mod api.Module, stack []uint64) {
	v, ok := e.instances.Load(mod)
	if !ok {
		stack[0] = 0
		return
	}
	it := v.(*Interpreter)
	b, ok := mod.Memory().Read(api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	if !ok {
		stack[0] = 1
		return
	}
	stack[0] = uint64(it.output.write(Stream(api.DecodeU32(stack[0])), b, printFuncFrom(ctx)))
}
