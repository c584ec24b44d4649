package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
)

const precompileUsage = `usage: monty precompile [--cache-dir DIR] [--no-checker]

Compiles the interpreter and the type checker to machine code for this platform and stores them in the cache.

flags:
`

// precompileCommand compiles the interpreter into a cache directory, for
// deployment images whose processes should start fast.
func precompileCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("monty precompile", precompileUsage, stderr)
	dir := fs.String("cache-dir", "", "cache `DIR` to fill (default "+defaultCacheHint+"); processes started with MONTY_CACHE_DIR=DIR (or monty serve --cache-dir DIR) then skip compilation")
	noChecker := fs.Bool("no-checker", false, "compile the interpreter only, not the type checker (monty check, --type-check)")
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return ExitUsage
	}
	opts := cacheOptions(*dir)
	if (*dir == "" && runtime.DefaultCacheDir() == "") || strings.EqualFold(*dir, runtime.CacheOff) {
		fmt.Fprintln(stderr, "monty precompile: the cache is off (MONTY_CACHE_DIR=off, or no user cache directory): give --cache-dir DIR")
		return ExitUsage
	}
	h := &noticeHandler{w: stderr, terminal: isTerminal(os.Stderr)}
	engine, err := runtime.NewEngine(ctx, append(opts, runtime.WithLogger(slog.New(h)))...)
	if err != nil {
		fmt.Fprintln(stderr, "monty precompile:", err)
		return ExitException
	}
	defer engine.Close(ctx)
	info := engine.CompileInfo()
	switch {
	case info.CacheError != nil:
		fmt.Fprintf(stderr, "monty precompile: the cache could not be filled: %v\n", info.CacheError)
		return ExitException
	case info.AOT:
		fmt.Fprintf(stdout, "Monty %s is translated to Go ahead of time in this binary: nothing to compile\n", engine.MontyVersion())
	case info.Cached:
		fmt.Fprintf(stdout, "Monty %s is already compiled in %s\n", engine.MontyVersion(), info.CacheDir)
	default:
		fmt.Fprintf(stdout, "compiled Monty %s into %s in %s\n", engine.MontyVersion(), info.CacheDir, info.Ready.Round(time.Millisecond))
	}
	if *noChecker {
		return ExitOK
	}
	checkerOpts := []typecheck.Option{typecheck.WithLogger(slog.New(h))}
	if *dir != "" {
		checkerOpts = append(checkerOpts, typecheck.WithCacheDir(*dir))
	}
	checker, err := typecheck.New(ctx, checkerOpts...)
	if err != nil {
		fmt.Fprintln(stderr, "monty precompile: type checker:", err)
		return ExitException
	}
	defer checker.Close(ctx)
	if ci := checker.CompileInfo(); ci.AOT {
		fmt.Fprintln(stdout, "the type checker is translated to Go ahead of time in this binary: nothing to compile")
	} else if ci.Cached {
		fmt.Fprintf(stdout, "the type checker is already compiled in %s\n", ci.CacheDir)
	} else {
		fmt.Fprintf(stdout, "compiled the type checker into %s in %s\n", ci.CacheDir, ci.Ready.Round(time.Millisecond))
	}
	return ExitOK
}

// defaultCacheHint describes the default cache directory in flag help.
const defaultCacheHint = "$MONTY_CACHE_DIR, else monty-go/compiled in the user cache directory"

// cacheOptions are the engine options for a --cache-dir value: "" the
// default cache, "off" none, else that directory.
func cacheOptions(dir string) []runtime.EngineOption {
	switch {
	case dir == "":
		return nil
	case strings.EqualFold(dir, runtime.CacheOff):
		return []runtime.EngineOption{runtime.WithCacheDir("")}
	}
	return []runtime.EngineOption{runtime.WithCacheDir(dir)}
}
