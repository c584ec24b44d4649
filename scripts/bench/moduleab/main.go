// Command moduleab scores builds of the interpreter module against each
// other in one run, so that their ratios come from the same process, the
// same machine and the same moment (scripts/bench/module-ab.sh builds the
// variants and runs it):
//
//	moduleab [flags] baseline=wasm/monty.wasm o2=/path/o2.wasm ...
//
// The first module is the baseline the ratios are taken against. For each
// module it measures
//
//   - its size, and the size of its code section;
//   - cold compile: NewEngine with a fresh, empty cache directory (-cold
//     runs);
//   - warm start: a fresh process (this program re-executed) that compiles
//     the module from a warm cache and runs `1 + 1` to a result, timed from
//     the parent as wall time (-warm runs);
//   - the kernels (-kernels: testdata/bench/NAME.py, one run per round;
//     default fib(25), the million-iteration loop, sorting, joining and
//     counting words) and the tiny call (testdata/bench/tiny.py, -tiny runs
//     per round, per run) on a warm interpreter, over -runs rounds;
//   - the dispatch loop (Monty's VM::run, found as the function with the
//     largest br_table): its size and locals in the module, and, in a build
//     with -tags perfmap, the machine code wazero makes of it and of the
//     whole module (compiled in a child process, no cache).
//
// Every measurement goes round-robin over the modules, starting each round
// at the next one, so that a slow spell of a shared machine falls on all of
// them alike. It prints two markdown tables, of the medians and of the best
// (fastest) samples, each figure with its ratio to the baseline, and on
// standard error every sample. On a busy machine the best is the steadier
// figure for the CPU-bound measurements.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	monty "github.com/monty-go/monty/runtime"
)

// Child mode: compile the module at $MODULEAB_CHILD from the warm cache at
// $MODULEAB_CACHE, run `1 + 1`, exit 0 on 2.
const (
	childEnv = "MODULEAB_CHILD"
	cacheEnv = "MODULEAB_CACHE"
)

type variant struct {
	name, path string
	wasm       []byte
	code       int // bytes of the code section
	cacheDir   string
	engine     *monty.Engine
	funcs      []wasmFunc
	dispatch   int // position of the dispatch loop in funcs
	programs   map[string]*monty.Program
	tiny       *monty.Program
	// samples, in nanoseconds
	cold, warm, tinyNs []float64
	kernelNs           map[string][]float64
}

func main() {
	if path := os.Getenv(childEnv); path != "" {
		status := child(path, os.Getenv(cacheEnv))
		removePerfMap()
		os.Exit(status)
	}
	if path := os.Getenv(compileEnv); path != "" {
		os.Exit(compileChild(path))
	}
	cold := flag.Int("cold", 3, "cold compiles per module")
	warm := flag.Int("warm", 7, "fresh-process warm starts per module")
	runs := flag.Int("runs", 21, "rounds of each kernel and of the tiny call per module")
	kernels := flag.String("kernels", "fib25,loop,sort,join,words", "comma-separated kernels: testdata/bench/NAME.py")
	tinyN := flag.Int("tiny", 500, "tiny calls per round")
	bench := flag.String("bench", "testdata/bench", "directory of the kernels and tiny.py")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [flags] name=module.wasm ... (the first is the baseline)\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	err := score(flag.Args(), strings.Split(*kernels, ","), *cold, *warm, *runs, *tinyN, *bench)
	removePerfMap()
	if err != nil {
		fmt.Fprintln(os.Stderr, "moduleab:", err)
		os.Exit(1)
	}
}

func child(path, dir string) int {
	err := func() error {
		ctx := context.Background()
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		e, err := monty.NewEngine(ctx, monty.WithModule(b), monty.WithCacheDir(dir))
		if err != nil {
			return err
		}
		it, err := e.NewInterpreter(ctx)
		if err != nil {
			return err
		}
		p, err := it.Compile(ctx, "1 + 1")
		if err != nil {
			return err
		}
		v, err := p.Run(ctx)
		if err != nil {
			return err
		}
		if !object.Equal(v, object.Int(2)) {
			return fmt.Errorf("1 + 1 gave %s", object.Repr(v))
		}
		return nil
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "moduleab child:", err)
		return 1
	}
	return 0
}

func score(args, kernels []string, cold, warm, runs, tinyN int, bench string) error {
	ctx := context.Background()
	sources := map[string]string{}
	for _, k := range kernels {
		src, err := os.ReadFile(filepath.Join(bench, k+".py"))
		if err != nil {
			return err
		}
		sources[k] = string(src)
	}
	tinySrc, err := os.ReadFile(filepath.Join(bench, "tiny.py"))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "moduleab")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	if err != nil {
		return err
	}

	var vs []*variant
	for _, a := range args {
		name, path, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("argument %q is not name=module.wasm", a)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		code, err := codeSize(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fns, err := definedFuncs(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if perfmapOn {
			fmt.Fprintf(os.Stderr, "moduleab: compiling %s for its machine code sizes\n", name)
			if err := machineCode(self, path, fns); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		dispatch := dispatchLoop(fns)
		if dispatch < 0 {
			return fmt.Errorf("%s: no function switches over %d opcodes: is it monty 1.4.0?", path, opcodes)
		}
		vs = append(vs, &variant{name: name, path: path, wasm: b, code: code, funcs: fns, dispatch: dispatch,
			programs: map[string]*monty.Program{}, kernelNs: map[string][]float64{}})
	}
	// roundRobin calls f for every module n times, each round starting at
	// the next module.
	roundRobin := func(what string, n int, f func(v *variant) error) error {
		fmt.Fprintf(os.Stderr, "moduleab: %s (%d rounds)\n", what, n)
		for r := range n {
			for i := range vs {
				v := vs[(r+i)%len(vs)]
				goruntime.GC()
				if err := f(v); err != nil {
					return fmt.Errorf("%s, %s: %w", what, v.name, err)
				}
			}
		}
		return nil
	}

	// Cold compile; the last run's cache directory stays warm for the
	// fresh-process starts.
	round := 0
	err = roundRobin("cold compile", cold, func(v *variant) error {
		round++
		dir := filepath.Join(tmp, fmt.Sprintf("%s-%d", v.name, round))
		t0 := time.Now()
		e, err := monty.NewEngine(ctx, monty.WithModule(v.wasm), monty.WithCacheDir(dir))
		d := time.Since(t0)
		if err != nil {
			return err
		}
		v.cold = append(v.cold, float64(d))
		if v.cacheDir != "" {
			_ = os.RemoveAll(v.cacheDir)
		}
		v.cacheDir = dir
		return e.Close(ctx)
	})
	if err != nil {
		return err
	}

	err = roundRobin("warm start of a fresh process", warm, func(v *variant) error {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), childEnv+"="+v.path, cacheEnv+"="+v.cacheDir)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		v.warm = append(v.warm, float64(d))
		return err
	})
	if err != nil {
		return err
	}

	// Warm interpreters: compiled from the warm cache, one each, with both
	// programs compiled and run once before timing.
	for _, v := range vs {
		if v.engine, err = monty.NewEngine(ctx, monty.WithModule(v.wasm), monty.WithCacheDir(v.cacheDir)); err != nil {
			return err
		}
		defer v.engine.Close(ctx)
		it, err := v.engine.NewInterpreter(ctx)
		if err != nil {
			return err
		}
		for _, k := range kernels {
			if v.programs[k], err = warmProgram(ctx, it, sources[k], nil); err != nil {
				return fmt.Errorf("%s: %s.py: %w", v.name, k, err)
			}
		}
		if v.tiny, err = warmProgram(ctx, it, string(tinySrc), object.Int(2)); err != nil {
			return fmt.Errorf("%s: tiny.py: %w", v.name, err)
		}
	}
	for _, k := range kernels {
		err = roundRobin(k, runs, func(v *variant) error {
			t0 := time.Now()
			_, err := v.programs[k].Run(ctx)
			v.kernelNs[k] = append(v.kernelNs[k], float64(time.Since(t0)))
			return err
		})
		if err != nil {
			return err
		}
	}
	err = roundRobin(fmt.Sprintf("tiny call (%d per round)", tinyN), runs, func(v *variant) error {
		t0 := time.Now()
		for range tinyN {
			if _, err := v.tiny.Run(ctx); err != nil {
				return err
			}
		}
		v.tinyNs = append(v.tinyNs, float64(time.Since(t0))/float64(tinyN))
		return nil
	})
	if err != nil {
		return err
	}

	for _, v := range vs {
		fmt.Fprintf(os.Stderr, "moduleab: %s samples (ms; tiny in µs): cold %s; warm start %s; tiny %s\n",
			v.name, samples(v.cold, 1e6), samples(v.warm, 1e6), samples(v.tinyNs, 1e3))
		for _, k := range kernels {
			fmt.Fprintf(os.Stderr, "moduleab: %s samples of %s (ms): %s\n", v.name, k, samples(v.kernelNs[k], 1e6))
		}
	}
	report(os.Stdout, vs, kernels, runs, tinyN, cold, warm)
	return nil
}

func warmProgram(ctx context.Context, it *monty.Interpreter, src string, want object.Value) (*monty.Program, error) {
	p, err := it.Compile(ctx, src)
	if err != nil {
		return nil, err
	}
	v, err := p.Run(ctx)
	if err != nil {
		return nil, err
	}
	if want != nil && !object.Equal(v, want) {
		return nil, fmt.Errorf("got %s, want %s", object.Repr(v), object.Repr(want))
	}
	return p, nil
}

func report(w io.Writer, vs []*variant, kernels []string, runs, tinyN, cold, warm int) {
	base := vs[0]
	cell := func(v, b float64, format string) string {
		return fmt.Sprintf(format+" (%.2f×)", v, v/b)
	}
	table := func(title string, stat func([]float64) float64) {
		fmt.Fprintf(w, "| module (%s) | size | code | cold compile | warm start | tiny call |", title)
		for _, k := range kernels {
			fmt.Fprintf(w, " %s |", k)
		}
		fmt.Fprintf(w, "\n|---|---|---|---|---|---|%s\n", strings.Repeat("---|", len(kernels)))
		for _, v := range vs {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |", v.name,
				cell(float64(len(v.wasm))/1e6, float64(len(base.wasm))/1e6, "%.2f MB"),
				cell(float64(v.code)/1e6, float64(base.code)/1e6, "%.2f MB"),
				cell(stat(v.cold)/1e9, stat(base.cold)/1e9, "%.2f s"),
				cell(stat(v.warm)/1e6, stat(base.warm)/1e6, "%.0f ms"),
				cell(stat(v.tinyNs)/1e3, stat(base.tinyNs)/1e3, "%.2f µs"))
			for _, k := range kernels {
				fmt.Fprintf(w, " %s |", cell(stat(v.kernelNs[k])/1e6, stat(base.kernelNs[k])/1e6, "%.1f ms"))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	table("median", median)
	table("best", slices.Min[[]float64])

	fmt.Fprintln(w, "| module | dispatch loop: function | wasm bytes | locals | wazero machine code | whole module's machine code |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, v := range vs {
		d := v.funcs[v.dispatch]
		machine, total := "(perfmap build only)", "(perfmap build only)"
		if perfmapOn {
			sum := 0
			for _, f := range v.funcs {
				sum += f.machine
			}
			bd, bsum := base.funcs[base.dispatch].machine, 0
			for _, f := range base.funcs {
				bsum += f.machine
			}
			machine = cell(float64(d.machine)/1e6, float64(bd)/1e6, "%.3f MB")
			total = cell(float64(sum)/1e6, float64(bsum)/1e6, "%.1f MB")
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %s |\n", v.name, d.imported+v.dispatch, d.body, d.locals, machine, total)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Median and best (fastest) of: cold compile %d, warm start (fresh process, warm cache, `1 + 1`) %d, each kernel %d and tiny call %d rounds (%d calls a round); ratios to %s, measured in the same run, round-robin; %s/%s, GOMAXPROCS %d.\n",
		cold, warm, runs, runs, tinyN, base.name, goruntime.GOOS, goruntime.GOARCH, goruntime.GOMAXPROCS(0))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func samples(xs []float64, unit float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x/unit)
	}
	return strings.Join(parts, " ")
}

// codeSize returns the size of a wasm module's code section.
func codeSize(b []byte) (int, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return 0, errors.New("not a wasm module")
	}
	for i := 8; i < len(b); {
		id := b[i]
		n, k := binary.Uvarint(b[i+1:])
		if k <= 0 {
			return 0, errors.New("bad section header")
		}
		if id == 10 {
			return int(n), nil
		}
		i += 1 + k + int(n)
	}
	return 0, errors.New("no code section")
}
