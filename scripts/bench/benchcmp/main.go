// Command benchcmp measures the workloads of testdata/bench in this runtime
// and in scripts/bench/table.sh's comparison columns, interleaved, and prints
// bench.sh's results lines. Run it from the repository root:
//
//	go run ./scripts/bench/benchcmp [-benchtime 3s] [-rounds 5] [-only fib25,sort]
//	    [-wasmtime VENV_PYTHON [-wasmtime-cache DIR]] [-native MONTY_NATIVE]
//	    [-upstream UPSTREAM_MONTY] [-python PYTHON3] [-columns go,aot]
//	    [-cpuprofile FILE]
//	benchcmp -peak-rss FILE -- COMMAND [ARG...]
//
// The second form is scripts/bench/start.py's helper: it runs COMMAND
// (its standard streams this process's), writes COMMAND's peak resident
// memory in bytes (its rusage's ru_maxrss) to FILE and exits with
// COMMAND's status. A process's ru_maxrss counts the peak of the process
// it was started from when that is larger (exec keeps the high-water mark
// of the memory it replaces), so a small process must start what is
// measured: this one (about 6 MiB, which a smaller peak reads as), not a
// Python interpreter (20 MiB and more).
//
// The columns (a flag left out leaves its column out):
//
//   - aot: only when built by scripts/aotgo.sh (scripts/bench/aot.sh):
//     the go column on the module translated to Go (wasm/aot), in this
//     process; the go column then stays on wazero;
//   - go: this runtime in this process: runtime.Default's engine, a warm
//     interpreter per program, compiled once, one Program.Run per run;
//   - wasmtime: scripts/bench/wasmtime/bench.py --serve run by the given Python
//     (the bench venv's, with the wasmtime wheel): the same module under
//     Cranelift, behind the same ABI;
//   - native: `monty-native serve` (scripts/native: monty compiled for the
//     host, in-process);
//   - upstream: upstream Monty's release binary (`monty FILE.py`, from
//     pydantic-monty-runtime), a process per run: its figure is the second
//     copy of the program in one process, the median run of a file holding
//     it twice less the median run of a file holding it once after a copy
//     compiled but not run, sampled in the same rounds (newUpstream);
//   - cpython: scripts/bench/benchcmp/cpython.py run by the given python3, the
//     program compiled once and executed in fresh globals per run.
//
// The workers speak a line protocol on stdin and stdout: a request
// "NAME N" runs workload NAME N times (preparing it, untimed, at its first
// request) and the answer is "NS REPR", the mean nanoseconds of one run
// and the repr of the program's value (nothing after NS for the workloads
// that are not programs), or "error MESSAGE".
//
// One workload at a time is measured: each column runs it once to warm up
// and to find how many runs make a sample of about -sample (a process per
// run is always one), then rounds follow in which every column takes one
// sample, round-robin, each round starting at the next column, so that a
// slow spell of a shared machine falls on all columns alike. Rounds go on
// until -benchtime has passed and every column has -rounds samples. A
// column's figure is the median of its samples (the minimum is logged
// too); every sample's value must be the same, and the same as CPython's
// (or this runtime's where CPython does not run the workload). A column
// that fails or disagrees is left out of that workload, the failure logged
// to stderr, and the exit status is 1.
//
// Results go to stdout as "<column> <workload> <ns>", and the baselines
// subtracted as "wasmtime call_floor <ns>" and "upstream NAME.first <ns>"
// (the medians of their samples). Progress goes to stderr.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// aotLinked says whether the module translated to Go is linked (by the
// file scripts/aotgo.sh adds).
var aotLinked bool

// A workload is one row of the comparison: a program of the bench
// directory (NAME.py) or an operation of the runtime, and the columns that
// run it.
type workload struct {
	name    string
	columns []string
}

// The Python workers of the wasmtime and cpython columns, relative to the
// repository's root, where benchcmp runs.
var (
	wasmtimeScript = filepath.Join("scripts", "bench", "wasmtime", "bench.py")
	cpythonScript  = filepath.Join("scripts", "bench", "benchcmp", "cpython.py")
)

// The columns of the programs, and of tiny and the operations of a runtime:
// upstream's process per run can neither resolve tiny.py's microsecond nor
// run an operation.
var (
	programColumns = []string{"go", "aot", "wasmtime", "native", "upstream", "cpython"}
	callColumns    = []string{"go", "aot", "wasmtime", "native", "cpython"}
)

var workloads = []workload{
	{"tiny", callColumns},
	{"fib25", programColumns},
	{"loop", programColumns},
	{"sort", programColumns},
	{"join", programColumns},
	{"words", programColumns},
	// Workloads adapted from pyperformance, as upstream's monty-bench has
	// them, written for this table.
	{"fannkuch", programColumns},
	{"spectral_norm", programColumns},
	{"nbody", programColumns},
	{"barnes_hut", programColumns},
	{"float", programColumns},
	{"unpack_sequence", programColumns},
	{"json_dumps", programColumns},
	{"json_loads", programColumns},
	{"gc_traversal", programColumns},
	// Agent-shaped workloads (upstream's too).
	{"aggregate", programColumns},
	{"fstring_report", programColumns},
	{"parse_strings", programColumns},
	{"datetime_math", programColumns},
	{"regex_extract", programColumns},
	// A REPL holding data_1mb.py dumped and loaded into another
	// interpreter (CPython: pickle.dumps and loads of the data).
	{"dump_load_1mb", callColumns},
	// A fresh interpreter (wasmtime: a store and instance; native: a new
	// REPL fed tiny.py).
	{"new_interpreter", []string{"go", "aot", "wasmtime", "native"}},
	// A warm interpreter from a runtime.Pool, and back.
	{"pool_get", []string{"go", "aot"}},
	// A fresh process that runs 1 + 1: this program started with
	// -first-result (the module loaded from the warm cache), or
	// `python3 -c '1+1'`.
	{"first_result", []string{"go", "aot", "cpython"}},
}

// A column runs workloads, one sample at a time.
type column struct {
	name string
	// run runs workload op n times; the mean ns of one run and the repr
	// of the last run's value ("" for a workload that is not a program).
	run func(op string, n int) (float64, string, error)
	// batch says whether a sample may be more than one run.
	batch bool
	// baseline names the workload whose median is subtracted from op's
	// ("" for none), sampled in the same rounds.
	baseline func(op string) string
	close    func()
}

func noBaseline(string) string { return "" }

func main() {
	firstResult := flag.Bool("first-result", false, "be the fresh process of the first_result workload")
	firstResultWazero := flag.Bool("wazero", false, "with -first-result: on wazero even when the AOT module is linked")
	code := flag.String("c", "", "with -first-result: run this Python instead of 1 + 1, its output printed as it comes (how much memory a program holding only an interpreter idles at: scripts/bench/start.py --idle-program)")
	peakRSS := flag.String("peak-rss", "", "run the command after the flags; write its peak resident memory to this file")
	dir := flag.String("dir", filepath.Join("testdata", "bench"), "the workloads' Python files")
	benchtime := flag.Duration("benchtime", 3*time.Second, "rounds of a workload go on at least this long")
	rounds := flag.Int("rounds", 5, "at least this many samples per column and workload")
	sample := flag.Duration("sample", 20*time.Millisecond, "a sample of a fast workload runs it about this long")
	only := flag.String("only", "", "comma-separated workloads to measure (default all)")
	wasmtimePython := flag.String("wasmtime", "", "the Python with the wasmtime wheel for the wasmtime column")
	wasmtimeCache := flag.String("wasmtime-cache", "", "where bench.py keeps the module's machine code")
	native := flag.String("native", "", "the monty-native binary for the native column")
	upstream := flag.String("upstream", "", "upstream's monty binary for the upstream column")
	python := flag.String("python", "", "the python3 for the cpython column")
	keep := flag.String("columns", "", "comma-separated columns of this process to keep, of go and aot (default both)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the measurements to this file (profile-guided optimization: docs/performance.md)")
	flag.Parse()
	if *firstResult {
		os.Exit(runFirstResult(*firstResultWazero, *code))
	}
	if *peakRSS != "" {
		os.Exit(runPeakRSS(*peakRSS, flag.Args()))
	}
	if _, err := os.Stat(filepath.Join(*dir, "tiny.py")); err != nil {
		fatalf("%v: run from the repository root or pass -dir", err)
	}

	// In a function of its own so that its deferred closes (and the
	// profile's end) run before the exit status is set.
	measured := func() bool {
		failed := false
		var columns []*column
		add := func(c *column, err error) {
			if err != nil {
				logf("%v; the %s column is missing", err, c.name)
				failed = true
				return
			}
			columns = append(columns, c)
		}
		kept := func(name string) bool { return *keep == "" || slices.Contains(strings.Split(*keep, ","), name) }
		if aotLinked {
			if kept("go") {
				add(newGoColumn(*dir, "go", runtime.WithWazero()))
			}
			if kept("aot") {
				add(newGoColumn(*dir, "aot"))
			}
		} else if kept("go") {
			add(newGoColumn(*dir, "go"))
		}
		if *wasmtimePython != "" {
			argv := []string{*wasmtimePython, wasmtimeScript, "--serve", "--dir", *dir}
			if *wasmtimeCache != "" {
				argv = append(argv, "--cache-dir", *wasmtimeCache)
			}
			add(newWorker("wasmtime", argv, func(op string) string {
				// The Python host's own cost of a call (bench.py: call_floor)
				// is larger than the module's share of a tiny call.
				if op == "tiny" {
					return "call_floor"
				}
				return ""
			}))
		}
		if *native != "" {
			add(newWorker("native", []string{*native, "serve", "--dir", *dir}, noBaseline))
		}
		if *upstream != "" {
			add(newUpstream(*upstream, *dir))
		}
		if *python != "" {
			add(newWorker("cpython", []string{*python, cpythonScript, *dir}, noBaseline))
		}
		defer func() {
			for _, c := range columns {
				c.close()
			}
		}()

		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				fatalf("%v", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fatalf("cpu profile: %v", err)
			}
			defer func() {
				pprof.StopCPUProfile()
				if err := f.Close(); err != nil {
					logf("cpu profile: %v", err)
					failed = true
				}
			}()
		}
		m := measurer{benchtime: *benchtime, rounds: *rounds, sample: *sample, baselines: map[string][]float64{}}
		wanted := strings.Split(*only, ",")
		for _, w := range workloads {
			if *only != "" && !slices.Contains(wanted, w.name) {
				continue
			}
			var cols []*column
			for _, c := range columns {
				if slices.Contains(w.columns, c.name) {
					cols = append(cols, c)
				}
			}
			if !m.measure(w.name, cols) {
				failed = true
			}
		}
		// The baselines, over all workloads, for bench.sh's notes.
		for _, key := range slices.Sorted(maps.Keys(m.baselines)) {
			fmt.Printf("%s %.1f\n", key, median(m.baselines[key]))
		}
		return !failed
	}()
	if !measured {
		os.Exit(1)
	}
}

// --- the rounds ---------------------------------------------------------------

type measurer struct {
	benchtime time.Duration
	rounds    int
	sample    time.Duration
	// baselines holds the samples of every baseline ("upstream fib25.first").
	baselines map[string][]float64
}

// A slot is one column's samples of one workload (or of its baseline).
type slot struct {
	col      *column
	op       string
	baseline *slot // the slot of the baseline subtracted from this one
	n        int   // runs per sample
	ns       []float64
	repr     string
	err      error
}

// take runs one sample and checks that the value has not changed.
func (s *slot) take() {
	ns, repr, err := s.col.run(s.op, s.n)
	switch {
	case err != nil:
		s.err = err
	case repr != s.repr:
		s.err = fmt.Errorf("a run returned %s, the first %s", repr, s.repr)
	default:
		s.ns = append(s.ns, ns)
	}
}

// warmUp runs the workload once (preparing it) and sets the runs per
// sample: about m.sample's worth, in two steps for fast workloads.
func (m *measurer) warmUp(s *slot) {
	s.n = 1
	for range 2 {
		ns, repr, err := s.col.run(s.op, s.n)
		if err != nil {
			s.err = err
			return
		}
		s.repr = repr
		if !s.col.batch || ns*float64(s.n) >= float64(m.sample) {
			return
		}
		s.n = int(min(math.Ceil(float64(m.sample)/max(ns, 1)), 1e7))
	}
}

// measure measures workload op in cols and prints the results; false if a
// column failed.
func (m *measurer) measure(op string, cols []*column) bool {
	if len(cols) == 0 {
		return true
	}
	var slots []*slot
	for _, c := range cols {
		s := &slot{col: c, op: op}
		slots = append(slots, s)
		if b := c.baseline(op); b != "" {
			s.baseline = &slot{col: c, op: b}
			slots = append(slots, s.baseline)
		}
	}
	logf("%s: warming up %s", op, names(slots))
	for _, s := range slots {
		m.warmUp(s)
	}
	start := time.Now()
	for round := 0; round < m.rounds || time.Since(start) < m.benchtime; round++ {
		live := 0
		for i := range slots {
			s := slots[(round+i)%len(slots)]
			if s.err == nil {
				s.take()
				live++
			}
		}
		if live == 0 {
			break
		}
	}
	return m.report(op, slots, time.Since(start))
}

// report checks the values, logs every slot and prints the results.
func (m *measurer) report(op string, slots []*slot, took time.Duration) bool {
	// The reference value: CPython's, else this runtime's.
	var ref *slot
	for _, name := range []string{"cpython", "go"} {
		for _, s := range slots {
			if ref == nil && s.col.name == name && s.op == op && s.err == nil {
				ref = s
			}
		}
	}
	ok := true
	var summary []string
	for _, s := range slots {
		if s.err == nil && ref != nil && s.op == op && s.repr != ref.repr {
			s.err = fmt.Errorf("returned %s, %s returned %s", s.repr, ref.col.name, ref.repr)
		}
		if s.err == nil && s.baseline != nil && s.baseline.err != nil {
			s.err = fmt.Errorf("its baseline %s failed", s.baseline.op)
		}
		if s.err != nil {
			logf("%s: %s failed: %v", op, s.col.name, s.err)
			ok = false
			continue
		}
		summary = append(summary, fmt.Sprintf("%s %s %s (min %s, %d × %d)", s.col.name, s.op,
			fmtNs(median(s.ns)), fmtNs(slices.Min(s.ns)), len(s.ns), s.n))
		if s.op != op { // a baseline
			key := s.col.name + " " + s.op
			m.baselines[key] = append(m.baselines[key], s.ns...)
			continue
		}
		ns := median(s.ns)
		if s.baseline != nil {
			ns -= median(s.baseline.ns)
		}
		fmt.Printf("%s %s %.1f\n", s.col.name, op, ns)
	}
	if ref != nil && ref.repr != "" {
		logf("%s -> %s", op, ref.repr)
	}
	logf("%s in %.1f s: %s", op, took.Seconds(), strings.Join(summary, "; "))
	return ok
}

func names(slots []*slot) string {
	var n []string
	for _, s := range slots {
		n = append(n, s.col.name+" "+s.op)
	}
	return strings.Join(n, ", ")
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchcmp: "+format+"\n", args...)
}

func fatalf(format string, args ...any) {
	logf(format, args...)
	os.Exit(1)
}

// --- this runtime ---------------------------------------------------------------

// goColumn holds what the workload being measured needs (one at a time:
// the previous one's interpreters are closed when the next is prepared).
type goColumn struct {
	dir    string
	engine *runtime.Engine
	wazero bool // on wazero though the AOT module is linked
	op     string
	// runOnce is one run; it returns the program's value, nil for the
	// other workloads.
	runOnce func() (object.Value, error)
	release func()
}

// newGoColumn is this runtime's column: on runtime.Default's engine, or on
// one made with opts.
func newGoColumn(dir, name string, opts ...runtime.EngineOption) (*column, error) {
	c := &column{name: name, batch: true, baseline: noBaseline}
	logf("%s: loading the module (compiling it first if the cache is cold)", name)
	var e *runtime.Engine
	var err error
	if len(opts) == 0 {
		e, err = runtime.Default(context.Background())
	} else {
		e, err = runtime.NewEngine(context.Background(), opts...)
	}
	if err != nil {
		return c, err
	}
	g := &goColumn{dir: dir, engine: e, wazero: !e.CompileInfo().AOT && aotLinked, release: func() {}}
	c.run = g.run
	c.close = func() { g.release() }
	return c, nil
}

func (g *goColumn) run(op string, n int) (float64, string, error) {
	if op != g.op {
		g.release()
		runOnce, release, err := g.prepare(op)
		g.release = release // what was made, also on an error
		if err != nil {
			g.op = ""
			return 0, "", err
		}
		g.op, g.runOnce = op, runOnce
	}
	var v object.Value
	var err error
	start := time.Now()
	for range n {
		if v, err = g.runOnce(); err != nil {
			return 0, "", err
		}
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(n)
	if v == nil {
		return ns, "", nil
	}
	return ns, object.Repr(v), nil
}

// prepare readies workload op; it returns one run and what closes what it
// made (also with an error).
func (g *goColumn) prepare(op string) (func() (object.Value, error), func(), error) {
	ctx := context.Background()
	var its []*runtime.Interpreter
	closeAll := func() {
		for _, it := range its {
			_ = it.Close(ctx)
		}
	}
	newInterp := func() (*runtime.Interpreter, error) {
		it, err := g.engine.NewInterpreter(ctx)
		if err == nil {
			its = append(its, it)
		}
		return it, err
	}
	switch op {
	case "dump_load_1mb":
		src, err := newInterp()
		if err != nil {
			return nil, closeAll, err
		}
		dst, err := newInterp()
		if err != nil {
			return nil, closeAll, err
		}
		data, err := os.ReadFile(filepath.Join(g.dir, "data_1mb.py"))
		if err != nil {
			return nil, closeAll, err
		}
		r, err := src.NewREPL(ctx)
		if err != nil {
			return nil, closeAll, err
		}
		if _, err := r.Run(ctx, string(data)); err != nil {
			return nil, closeAll, err
		}
		return func() (object.Value, error) {
			dump, err := r.Dump(ctx)
			if err != nil {
				return nil, err
			}
			loaded, _, err := dst.LoadREPL(ctx, dump)
			if err != nil {
				return nil, err
			}
			loaded.Close()
			return nil, nil
		}, closeAll, nil
	case "new_interpreter":
		return func() (object.Value, error) {
			it, err := g.engine.NewInterpreter(ctx)
			if err != nil {
				return nil, err
			}
			return nil, it.Close(ctx)
		}, closeAll, nil
	case "pool_get":
		pool := runtime.NewPool(g.engine, 8)
		time.Sleep(200 * time.Millisecond) // let it fill
		return func() (object.Value, error) {
			it, err := pool.Get(ctx)
			if err != nil {
				return nil, err
			}
			pool.Put(it)
			return nil, nil
		}, func() { pool.Close(ctx) }, nil
	case "first_result":
		self, err := os.Executable()
		if err != nil {
			return nil, closeAll, err
		}
		args := []string{"-first-result"}
		if g.wazero {
			args = append(args, "-wazero")
		}
		return func() (object.Value, error) {
			out, err := exec.Command(self, args...).CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("%s -first-result: %v: %s", self, err, out)
			}
			return nil, nil
		}, closeAll, nil
	}
	src, err := os.ReadFile(filepath.Join(g.dir, op+".py"))
	if err != nil {
		return nil, closeAll, err
	}
	it, err := newInterp()
	if err != nil {
		return nil, closeAll, err
	}
	p, err := it.Compile(ctx, string(src), runtime.WithScriptName(op+".py"))
	if err != nil {
		return nil, closeAll, err
	}
	return func() (object.Value, error) { return p.Run(ctx) }, closeAll, nil
}

// runFirstResult is the fresh process of first_result: the module from the
// warm cache (or the AOT module, when linked and not wazero), a new
// interpreter, `1 + 1`; or, given code, that code with its output streamed.
func runFirstResult(wazero bool, code string) int {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	if wazero {
		e, err = runtime.NewEngine(ctx, runtime.WithWazero())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	it, err := e.NewInterpreter(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if code != "" {
		it.SetOutput(os.Stdout, os.Stderr)
		p, err := it.Compile(ctx, code)
		if err == nil {
			_, err = p.Run(ctx)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	p, err := it.Compile(ctx, "1 + 1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	v, err := p.Run(ctx)
	if err != nil || object.Repr(v) != "2" {
		fmt.Fprintf(os.Stderr, "1 + 1 returned %v (%v)\n", v, err)
		return 1
	}
	return 0
}

// runPeakRSS is -peak-rss: runs argv, writes its peak resident memory in
// bytes to file and returns argv's exit status.
func runPeakRSS(file string, argv []string) int {
	if len(argv) == 0 {
		fatalf("-peak-rss needs a command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
		fatalf("%v", err)
	}
	rss, ok := maxRSS(cmd.ProcessState.SysUsage())
	if !ok {
		fatalf("no peak resident memory on %s", goruntime.GOOS)
	}
	if err := os.WriteFile(file, []byte(strconv.FormatInt(rss, 10)), 0o644); err != nil {
		fatalf("%v", err)
	}
	return cmd.ProcessState.ExitCode()
}

// --- workers ------------------------------------------------------------------

// newWorker starts a worker process speaking the line protocol; its stderr
// is ours.
func newWorker(name string, argv []string, baseline func(string) string) (*column, error) {
	c := &column{name: name, batch: true, baseline: baseline}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return c, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return c, err
	}
	logf("%s: starting %s", name, strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		return c, err
	}
	r := bufio.NewReader(out)
	c.run = func(op string, n int) (float64, string, error) {
		if _, err := fmt.Fprintf(in, "%s %d\n", op, n); err != nil {
			return 0, "", fmt.Errorf("writing to the worker: %w", err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, "", fmt.Errorf("the worker ended (%w)", err)
		}
		return parseAnswer(strings.TrimSuffix(line, "\n"))
	}
	c.close = func() {
		_ = in.Close() // the end of its stdin ends a worker
		_ = cmd.Wait()
	}
	return c, nil
}

// parseAnswer reads "NS REPR", "NS" or "error MESSAGE".
func parseAnswer(line string) (float64, string, error) {
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return 0, "", errors.New(msg)
	}
	nsText, repr, _ := strings.Cut(line, " ")
	ns, err := strconv.ParseFloat(nsText, 64)
	if err != nil {
		return 0, "", fmt.Errorf("unexpected answer %q", line)
	}
	return ns, repr, nil
}

// --- upstream -------------------------------------------------------------------

// newUpstream is upstream's monty binary, a process per run, measured warm
// like the columns that run in one process: its figure for a program is the
// second copy of it in one process, the median run of a file holding the
// program twice less the median run of one holding it once after a copy
// that is compiled but not run (upstreamFiles). A process's first run of a
// program is slower than its second on upstream's side too, so the run of
// the program less an empty file's would set a cold first run beside warm
// ones (docs/performance.md, "Whole processes"; scripts/bench/processes.py
// measures first runs, as whole processes). `monty FILE` prints the
// program's output to stdout and "TIME ❯ REPR" to stderr.
func newUpstream(bin, dir string) (*column, error) {
	c := &column{name: "upstream", baseline: func(op string) string { return op + firstCopy }}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return c, fmt.Errorf("%s --version: %v: %s", bin, err, out)
	}
	logf("upstream: %s (%s)", strings.TrimSpace(string(out)), bin)
	tmp, err := os.MkdirTemp("", "benchcmp-")
	if err != nil {
		return c, err
	}
	c.close = func() { _ = os.RemoveAll(tmp) }
	c.run = func(op string, _ int) (float64, string, error) {
		name, first := strings.CutSuffix(op, firstCopy)
		twice := filepath.Join(tmp, name+".twice.py")
		once := filepath.Join(tmp, name+".once.py")
		if _, err := os.Stat(twice); err != nil {
			program, err := os.ReadFile(filepath.Join(dir, name+".py"))
			if err != nil {
				return 0, "", err
			}
			t, o := upstreamFiles(string(program))
			if err := os.WriteFile(once, []byte(o), 0o644); err != nil {
				return 0, "", err
			}
			if err := os.WriteFile(twice, []byte(t), 0o644); err != nil {
				return 0, "", err
			}
		}
		file := twice
		if first {
			file = once
		}
		cmd := exec.Command(bin, file)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		ns := float64(time.Since(start).Nanoseconds())
		if err != nil {
			return 0, "", fmt.Errorf("%s %s: %v: %s", bin, file, err, stderr.Bytes())
		}
		_, repr, found := strings.Cut(strings.TrimSpace(stderr.String()), "❯ ")
		if !found {
			return 0, "", fmt.Errorf("%s %s: no value in %q", bin, file, stderr.Bytes())
		}
		return ns, repr, nil
	}
	return c, nil
}

// firstCopy names the baseline of an upstream workload: op+firstCopy runs
// the file holding the program once.
const firstCopy = ".first"

// upstreamFiles returns the two files the upstream column runs for a
// program: twice holds the program and then the program again; once holds
// the program indented under an `if` whose test is false at run time
// (upstream compiles it; a constant test might let a compiler drop it),
// then the program. Both parse and compile two copies and end on the
// program's value, so twice less once is one run of the program in a
// process that has run it before.
func upstreamFiles(program string) (twice, once string) {
	program = strings.TrimRight(program, "\n") + "\n"
	var dead strings.Builder
	dead.WriteString("_benchcmp_never = len('') > 0\nif _benchcmp_never:\n    pass\n")
	for line := range strings.Lines(program) {
		if strings.TrimSpace(line) == "" {
			dead.WriteString(line)
			continue
		}
		dead.WriteString("    " + line)
	}
	return program + program, dead.String() + program
}
