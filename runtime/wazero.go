package runtime

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/monty-go/monty/runtime/internal/modcache"
)

// wazeroModule is monty.wasm compiled by wazero, into machine code or for
// wazero's interpreter engine.
type wazeroModule struct {
	rt        wazero.Runtime
	cache     wazero.CompilationCache // nil without a cache
	compiled  wazero.CompiledModule
	isMachine bool
	instances sync.Map // api.Module -> *Interpreter, for monty.print
}

// newWazeroModule compiles the module into a new wazero runtime (machine
// code, or wazero's interpreter engine) with the host imports it needs.
func newWazeroModule(ctx context.Context, cfg *engineConfig, cache *modcache.Entry, machine bool, workers int) (*wazeroModule, error) {
	rc := wazero.NewRuntimeConfigInterpreter()
	if machine {
		rc = wazero.NewRuntimeConfig()
	}
	rc = rc.WithMemoryLimitPages(cfg.memoryPages)
	m := &wazeroModule{isMachine: machine}
	if cache != nil {
		cc, err := wazero.NewCompilationCacheWithDir(cache.Dir)
		if err != nil {
			return nil, fmt.Errorf("monty: compilation cache: %w", err)
		}
		m.cache = cc
		rc = rc.WithCompilationCache(cc)
	}
	if cfg.tune != nil {
		rc = cfg.tune(rc)
	}
	m.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if err := m.load(experimental.WithCompilationWorkers(ctx, workers), cfg.module); err != nil {
		m.close(ctx)
		return nil, err
	}
	return m, nil
}

func (m *wazeroModule) load(ctx context.Context, wasmBytes []byte) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, m.rt); err != nil {
		return fmt.Errorf("monty: instantiate WASI: %w", err)
	}
	_, err := m.rt.NewHostModuleBuilder("monty").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(m.hostPrint),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		WithParameterNames("stream", "ptr", "len").
		Export("print").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("monty: host module: %w", err)
	}
	m.compiled, err = m.rt.CompileModule(ctx, wasmBytes)
	if err != nil {
		return fmt.Errorf("monty: compile module: %w", err)
	}
	for _, name := range []string{"monty_abi_version", "monty_reserve", "monty_call", "monty_release"} {
		if _, ok := m.compiled.ExportedFunctions()[name]; !ok {
			return fmt.Errorf("monty: module does not export %s: not a monty-go interpreter module", name)
		}
	}
	return nil
}

func (m *wazeroModule) machine() bool { return m.isMachine }

func (m *wazeroModule) close(ctx context.Context) {
	_ = m.rt.Close(ctx)
	if m.cache != nil {
		_ = m.cache.Close(ctx)
	}
}

func (m *wazeroModule) instantiate(ctx context.Context, it *Interpreter) (instance, error) {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithSysWalltime().
		WithNanotime(it.nanotime, 1).
		WithNanosleep(it.nanosleep).
		WithRandSource(rand.Reader).
		WithStderr(&it.stderr)
	mod, err := m.rt.InstantiateModule(withMemoryAllocator(ctx), m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("monty: instantiate interpreter: %w", err)
	}
	m.instances.Store(mod, it)
	return &wazeroInstance{
		owner:  m,
		mod:    mod,
		mem:    mod.Memory(),
		fnABI:  mod.ExportedFunction("monty_abi_version"),
		fnRes:  mod.ExportedFunction("monty_reserve"),
		fnCall: mod.ExportedFunction("monty_call"),
		fnRel:  mod.ExportedFunction("monty_release"),
	}, nil
}

// hostPrint is the module's `monty.print(stream, ptr, len) -> status` import.
func (m *wazeroModule) hostPrint(ctx context.Context, mod api.Module, stack []uint64) {
	v, ok := m.instances.Load(mod)
	if !ok {
		stack[0] = 0
		return
	}
	b, ok := mod.Memory().Read(api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	if !ok {
		stack[0] = 1
		return
	}
	stack[0] = uint64(v.(*Interpreter).printOutput(ctx, api.DecodeU32(stack[0]), b))
}

// wazeroInstance is one wazero module instance.
type wazeroInstance struct {
	owner  *wazeroModule
	mod    api.Module
	mem    api.Memory
	fnABI  api.Function
	fnRes  api.Function
	fnCall api.Function
	fnRel  api.Function
	stack  [3]uint64
}

func (w *wazeroInstance) abiVersion(ctx context.Context) (uint32, error) {
	r, err := w.fnABI.Call(ctx)
	if err != nil {
		return 0, err
	}
	return api.DecodeU32(r[0]), nil
}

func (w *wazeroInstance) reserve(ctx context.Context, n uint32) (uint32, error) {
	r, err := w.fnRes.Call(ctx, uint64(n))
	if err != nil {
		return 0, err
	}
	return api.DecodeU32(r[0]), nil
}

func (w *wazeroInstance) call(ctx context.Context, op, handle, n uint32) (uint64, error) {
	w.stack[0], w.stack[1], w.stack[2] = uint64(op), uint64(handle), uint64(n)
	if err := w.fnCall.CallWithStack(ctx, w.stack[:]); err != nil {
		return 0, err
	}
	return w.stack[0], nil
}

func (w *wazeroInstance) release(ctx context.Context) error {
	_, err := w.fnRel.Call(ctx)
	return err
}

func (w *wazeroInstance) read(ptr, n uint32) ([]byte, bool) { return w.mem.Read(ptr, n) }

func (w *wazeroInstance) write(ptr uint32, b []byte) bool { return w.mem.Write(ptr, b) }

func (w *wazeroInstance) close(ctx context.Context) error {
	w.owner.instances.Delete(w.mod)
	return w.mod.Close(ctx)
}
