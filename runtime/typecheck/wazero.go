package typecheck

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/internal/guest"
	"github.com/monty-go/monty/runtime/internal/modcache"
)

// wazeroCode is the checker module compiled into its wazero runtime.
type wazeroCode struct {
	rt     wazero.Runtime
	module wazero.CompiledModule
	cache  wazero.CompilationCache
}

// compileModule builds the runtime, compiles the module and checks it
// with a first instance, which stays idle for the first check.
func compileModule(ctx context.Context, cfg *config, module []byte, entry *modcache.Entry, log *slog.Logger) (*compiled, *instance, error) {
	start := time.Now()
	w := &wazeroCode{}
	c := &compiled{maxPages: cfg.memoryPages, code: w}
	// The checker has no clock-driven stop of its own (ty runs each query
	// to the end), so time limits and cancellation use wazero's: the
	// compiled code checks the context in its loops and calls.
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(cfg.memoryPages)
	if entry != nil && !entry.Warm {
		// One process fills an entry at a time (see runtime's compile).
		unlock, err := entry.Fill(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil, err
		case err != nil:
			log.Warn("the compilation cache's lock cannot be taken; compiling without it", "event", "cache_lock", "module", "checker", "error", err)
		default:
			defer unlock()
		}
	}
	if entry != nil {
		cc, err := wazero.NewCompilationCacheWithDir(entry.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("monty: type checker compilation cache: %w", err)
		}
		w.cache = cc
		rc = rc.WithCompilationCache(cc)
		c.info.CacheDir, c.info.Cached = entry.Dir, entry.Warm
		if !entry.Warm {
			log.Info("compiling the type checker to machine code; this takes several seconds, once per module version",
				"event", "compile_start", "module", "checker", "cache_dir", entry.Root)
		}
	} else {
		log.Info("compiling the type checker to machine code; this takes several seconds (no cache)", "event", "compile_start", "module", "checker")
	}
	w.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (*compiled, *instance, error) {
		_ = w.close(context.Background())
		return nil, nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, w.rt); err != nil {
		return fail(fmt.Errorf("monty: type checker: instantiate WASI: %w", err))
	}
	var err error
	w.module, err = w.rt.CompileModule(experimental.WithCompilationWorkers(ctx, goruntime.GOMAXPROCS(0)), module)
	if err != nil {
		return fail(fmt.Errorf("monty: compile type checker module: %w", err))
	}
	for _, name := range []string{"checker_abi_version", "checker_reserve", "checker_call"} {
		if _, ok := w.module.ExportedFunctions()[name]; !ok {
			return fail(fmt.Errorf("monty: module does not export %s: not a monty-go type checker module", name))
		}
	}
	in, err := c.start(ctx)
	if err != nil {
		return fail(err)
	}
	if entry != nil && !entry.Warm {
		if err := entry.MarkReady(); err != nil {
			log.Warn("the compilation cache entry could not be marked ready", "event", "cache_unusable", "module", "checker", "error", err)
		}
	}
	if !c.info.Cached {
		log.Info("type checker compiled", "event", "compile_done", "module", "checker", "took", time.Since(start).Round(time.Millisecond))
	}
	return c, in, nil
}

func (w *wazeroCode) close(ctx context.Context) error {
	err := w.rt.Close(ctx)
	if w.cache != nil {
		err = errors.Join(err, w.cache.Close(ctx))
	}
	return err
}

func (w *wazeroCode) instantiate(ctx context.Context, stderr *guest.Stderr) (backend, error) {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithStderr(stderr)
	mod, err := w.rt.InstantiateModule(ctx, w.module, cfg)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", runtime.ErrCancelled, context.Cause(ctx))
		}
		return nil, fmt.Errorf("monty: instantiate type checker: %w", err)
	}
	return &wazeroInstance{mod: mod, mem: mod.Memory(), fnRes: mod.ExportedFunction("checker_reserve"),
		fnCall: mod.ExportedFunction("checker_call")}, nil
}

// wazeroInstance is one instance of the checker module on wazero.
type wazeroInstance struct {
	mod           api.Module
	mem           api.Memory
	fnRes, fnCall api.Function
	stack         [2]uint64
}

func (w *wazeroInstance) abiVersion(ctx context.Context) (uint32, error) {
	r, err := w.mod.ExportedFunction("checker_abi_version").Call(ctx)
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

func (w *wazeroInstance) call(ctx context.Context, op, n uint32) (uint64, error) {
	w.stack[0], w.stack[1] = uint64(op), uint64(n)
	if err := w.fnCall.CallWithStack(ctx, w.stack[:]); err != nil {
		return 0, err
	}
	return w.stack[0], nil
}

func (w *wazeroInstance) read(ptr, n uint32) ([]byte, bool) { return w.mem.Read(ptr, n) }

func (w *wazeroInstance) write(ptr uint32, b []byte) bool { return w.mem.Write(ptr, b) }

func (w *wazeroInstance) close(ctx context.Context) { _ = w.mod.Close(ctx) }
