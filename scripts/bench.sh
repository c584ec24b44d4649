#!/usr/bin/env bash
# Compares the Go runtime with the same module under wasmtime, with monty run
# natively and with CPython on the same workloads (testdata/bench/*.py), times
# the monty command's start, and checks the performance targets.
#
#   scripts/bench.sh            # Go: -benchtime 2s; the others: >= 1 s per workload
#   BENCHTIME=5s scripts/bench.sh
#
# One command on a fresh machine: it first installs what it needs, saying so
# once per step: the pinned Rust toolchain when no Rust 1.96 is there
# (scripts/install-toolchain.sh, for the native column) and a Python venv
# with wasmtime in ${XDG_CACHE_HOME:-~/.cache}/monty-go/bench-venv (from
# scripts/wasmtime/requirements.txt, recreated when that file changes).
#
# Runs, in one go:
#   * the Go benchmarks of ./runtime (go test -run '^$' -bench . -benchtime 2s),
#   * scripts/wasmtime/bench.py: the committed wasm/monty.wasm under wasmtime
#     (Cranelift) through its Python wheel, speaking the module's ABI as
#     runtime/ does: the engine's share of the gap to native,
#   * scripts/native's `monty-native bench` (monty 1.4.0 compiled natively),
#   * CPython (python3) running the same files in-process with timeit, plus
#     `python3 -c '1+1'` in a subprocess for the per-process start cost,
#   * scripts/bench_start.py with the monty command built from ./cmd/monty:
#     `monty -c 'print(1)'` against `python3 -c 'print(1)'` (warm cache,
#     median of 15), and the first result of `monty serve`, `monty mcp` and
#     `monty -c` with a fresh, empty MONTY_CACHE_DIR (median of 3; -c once).
# Prints a table (workload, Go, wasmtime, native, CPython, the ratios of Go to
# each, target, met?), then the same table as markdown for the README. Exits
# non-zero if a part could not run (the table still shows the rest).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
benchtime=${BENCHTIME:-2s}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/monty-go
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
: >"$tmp/results" # lines: "<source> <key> <ns/op>"

say() { echo "bench.sh: $*" >&2; }

# The compiled-module cache of the warm measurements (Go benchmarks, monty -c):
# the default one (runtime.DefaultCacheDir), unless MONTY_CACHE_DIR says otherwise.
warm_cache=${MONTY_CACHE_DIR:-$cache_root/compiled}

# --- setup ------------------------------------------------------------------
# Rust 1.96 for the native column. install-toolchain.sh is idempotent, but it
# needs apt (and sudo when not root), so it runs only when native/build.sh
# finds no toolchain it can use.
if ! scripts/native/build.sh check 2>/dev/null; then
  say "no Rust 1.96 for the native column: installing the pinned toolchain (scripts/install-toolchain.sh)"
  scripts/install-toolchain.sh || say "scripts/install-toolchain.sh failed; the native column will be missing"
fi

# The real CPython binary: the python3 on PATH may be a (slow) pyenv shim,
# which would add its own start to `python3 -c` and to every helper.
python=""
if command -v python3 >/dev/null; then
  python=$(python3 -c 'import sys; print(sys.executable)') || python=""
fi

# The wasmtime venv, (re)made when it is missing, broken (its Python gone) or
# its requirements changed; $venv/requirements.txt records what it holds.
venv=$cache_root/bench-venv
requirements=scripts/wasmtime/requirements.txt
venv_ok() {
  cmp -s "$requirements" "$venv/requirements.txt" && "$venv/bin/python" -c 'import wasmtime' 2>/dev/null
}
if [ -n "$python" ] && ! venv_ok; then
  say "creating the wasmtime venv $venv ($python -m venv; pip install -r $requirements)"
  mkdir -p "$cache_root"
  if "$python" -m venv --clear "$venv" &&
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"; then
    cp "$requirements" "$venv/requirements.txt" # the stamp: installed as listed
  else
    say "could not create the venv; the wasmtime column will be missing"
  fi
fi

# --- Go ---------------------------------------------------------------------
if command -v go >/dev/null; then
  say "go test -run '^\$' -bench . -benchtime $benchtime ./runtime/"
  if go test -run '^$' -bench . -benchtime "$benchtime" ./runtime/ >"$tmp/go.txt" 2>&1; then
    cat "$tmp/go.txt" >&2
  else
    cat "$tmp/go.txt" >&2
    say "the Go benchmarks failed (output above)"
    failed=1
  fi
  # "BenchmarkTinyCall-8   1000   1234 ns/op ..." -> "go TinyCall 1234"
  awk '$1 ~ /^Benchmark/ { for (i = 3; i < NF; i++) if ($(i + 1) == "ns/op") {
         name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
         print "go", name, $i } }' "$tmp/go.txt" >>"$tmp/results"
  say "go build -o $tmp/monty ./cmd/monty (for the start-time rows)"
  go build -o "$tmp/monty" ./cmd/monty || { say "could not build ./cmd/monty"; failed=1; }
else
  say "go not found; skipping the Go benchmarks and the start-time rows"
  failed=1
fi

# --- wasmtime ---------------------------------------------------------------
if venv_ok; then
  say "scripts/wasmtime/bench.py (wasm/monty.wasm under wasmtime $(grep -o 'wasmtime==[^ ]*' "$requirements" | cut -d= -f3))"
  # Cranelift takes a while to compile the module: its machine code is kept
  # in $cache_root/wasmtime, keyed by the module's hash and wasmtime version.
  if "$venv/bin/python" scripts/wasmtime/bench.py --cache-dir "$cache_root/wasmtime" >"$tmp/wasmtime.txt"; then
    cat "$tmp/wasmtime.txt" >&2
  else
    cat "$tmp/wasmtime.txt" >&2
    say "scripts/wasmtime/bench.py failed"
    failed=1
  fi
  grep '^wasmtime ' "$tmp/wasmtime.txt" >>"$tmp/results"
else
  say "no wasmtime venv; skipping the wasmtime column"
  failed=1
fi

# --- native -----------------------------------------------------------------
if native_bin=$(scripts/native/build.sh); then
  say "$native_bin bench"
  if "$native_bin" bench --dir testdata/bench >"$tmp/native.json"; then
    cat "$tmp/native.json" >&2
    # {"tiny_call": {"ns_per_op": 696.6, ...}, ...} -> "native tiny_call 696.6"
    grep -o '"[a-z0-9_]*": {"ns_per_op": [0-9.e+]*' "$tmp/native.json" |
      sed 's/^"\([a-z0-9_]*\)": {"ns_per_op": \(.*\)$/native \1 \2/' >>"$tmp/results"
  else
    say "monty-native bench failed"
    failed=1
  fi
else
  say "could not build scripts/native; skipping the native column"
  failed=1
fi

# --- CPython ----------------------------------------------------------------
if [ -n "$python" ]; then
  say "$("$python" --version 2>&1) ($python) with timeit"
  if ! "$python" - testdata/bench >>"$tmp/results" <<'PY'; then
import os
import pickle
import subprocess
import sys
import time
import timeit

bench_dir = sys.argv[1]


def source(name):
    with open(os.path.join(bench_dir, name)) as f:
        return f.read()


def per_op(fn, min_time=1.0):
    """ns per call of fn, measured over at least min_time seconds."""
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    number = max(1, int(number * min_time / max(elapsed, 1e-9)) + 1)
    return timer.timeit(number) / number * 1e9


tiny = compile(source('tiny.py'), 'tiny.py', 'exec')
fib = compile(source('fib25.py'), 'fib25.py', 'exec')
loop = compile(source('loop.py'), 'loop.py', 'exec')
data_ns = {}
exec(compile(source('data_1mb.py'), 'data_1mb.py', 'exec'), data_ns)
data = data_ns['data']


def fresh_process():
    subprocess.run([sys.executable, '-c', '1+1'], check=True)


def process_per_op(min_time=1.0):
    fresh_process()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fresh_process()
        n += 1
    return (time.perf_counter() - start) / n * 1e9


print('cpython tiny', per_op(lambda: exec(tiny, {})))
print('cpython fib25', per_op(lambda: exec(fib, {})))
print('cpython loop', per_op(lambda: exec(loop, {})))
print('cpython dump_load_1mb', per_op(lambda: pickle.loads(pickle.dumps(data))))
print('cpython fresh_process', process_per_op())
PY
    say "the CPython measurements failed"
    failed=1
  fi
else
  say "python3 not found; skipping the CPython column, wasmtime and the start-time rows"
  failed=1
fi

# --- start time -------------------------------------------------------------
if [ -x "$tmp/monty" ] && [ -n "$python" ]; then
  say "scripts/bench_start.py: monty -c vs python3 -c (warm cache), then serve, mcp and -c with no cache (about a minute)"
  if ! "$python" scripts/bench_start.py "$tmp/monty" "$warm_cache" >>"$tmp/results"; then
    say "some start-time measurements failed (above)"
    failed=1
  fi
fi

# --- table ------------------------------------------------------------------
# Rows: label | Go | wasmtime | native | CPython | target
# Each column is a "source/key" of the results ("-": none). The target is
#   native X  -> Go/native <= X;  cpython X -> Go/CPython <= X;
#   abs N     -> Go <= N ns;      -         -> none (a reference row).
# "Go" is this runtime: the Go benchmarks, or the monty command built from
# ./cmd/monty for the start-time rows.
cat >"$tmp/rows" <<'EOF'
tiny call (1 + 1)|go/TinyCall|wasmtime/tiny_call_net|native/tiny_call|cpython/tiny|native 3
fib(25)|go/Fib25|wasmtime/fib25|native/fib25|cpython/fib25|native 1.5
loop of 1M iterations|go/Loop/background-ctx|wasmtime/loop|-|cpython/loop|-
pool get|go/PoolGet|-|-|-|abs 100000
fresh instantiate|go/NewInterpreter|wasmtime/new_interpreter|native/new_repl|-|abs 1000000
first result, fresh process (warm cache)|go/FirstResultFreshProcess|-|-|cpython/fresh_process|abs 50000000
monty -c 'print(1)', warm cache|start/monty_c|-|-|start/python_c|cpython 1.5
monty check -c 'print(1)', warm cache|start/check_c|-|-|-|-
first result, no cache: monty serve|start/serve_cold|-|-|-|abs 2000000000
first result, no cache: monty mcp|start/mcp_cold|-|-|-|abs 2000000000
monty -c 'print(1)', no cache (compiles)|start/cli_cold|-|-|-|-
REPL dump+load, 1 MB|go/REPLDumpLoad1MB|wasmtime/repl_dump_load_1mb|native/repl_dump_load_1mb|cpython/dump_load_1mb|abs 5000000
EOF

awk -F'|' -v results="$tmp/results" -v md="$tmp/table.md" '
function fmt(ns) {
  if (ns == "") return "n/a"
  if (ns >= 1e9) return sprintf("%.2f s", ns / 1e9)
  if (ns >= 1e6) return sprintf("%.2f ms", ns / 1e6)
  if (ns >= 1e3) return sprintf("%.2f µs", ns / 1e3)
  return sprintf("%.0f ns", ns)
}
# Display width: mawk counts bytes, and µ, ×, ≤ and — take more than one.
function width(s) { gsub(/µ|×|≤|—/, "-", s); return length(s) }
function pad(s, w, left) {
  while (width(s) < w) s = left ? s " " : " " s
  return s
}
# Prints the cells of a "|"-separated row padded to widths (negative: left).
function row(cells,   cell, i, out, w) {
  split(cells, cell, "|")
  out = ""
  for (i = 1; i <= 10; i++) {
    w = widths[i] + 0
    out = out ((i > 1) ? ((i == 9) ? "  " : " ") : "") ((w < 0) ? pad(cell[i], -w, 1) : pad(cell[i], w, 0))
  }
  print out
}
function get(spec) { return (spec == "-") ? "" : val[spec] }
function ratio(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2f×", a / b) : "—" }
BEGIN {
  while ((getline line < results) > 0) {
    split(line, f, " ")
    val[f[1] "/" f[2]] = f[3]
    if (f[1] == "go") goseen[f[2]] = 1
  }
  split("-42 10 10 10 10 8 8 8 -18 0", widths, " ")
  row("workload|Go|wasmtime|native|CPython|Go/wasmt|Go/nat|Go/CPy|target|status")
  print "| workload | Go | wasmtime | native | CPython | Go/wasmtime | Go/native | Go/CPython | target | status |" > md
  print "|---|---:|---:|---:|---:|---:|---:|---:|---|---|" > md
}
{
  g = get($2); w = get($3); n = get($4); c = get($5)
  if ($2 ~ /^go\//) used[substr($2, 4)] = 1
  split($6, t, " ")
  if (t[1] == "native" || t[1] == "cpython") {
    other = (t[1] == "native") ? n : c
    target = sprintf("≤ %s× %s", t[2], (t[1] == "native") ? "native" : "CPython")
    status = (g == "" || other == "") ? "unknown" : ((g / other <= t[2] + 0) ? "met" : "MISSED")
  } else if (t[1] == "abs") {
    target = "≤ " fmt(t[2])
    status = (g == "") ? "unknown" : ((g + 0 <= t[2] + 0) ? "met" : "MISSED")
  } else {
    target = "(reference)"; status = "—"
  }
  cells = sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%s", $1, fmt(g), ($3 == "-") ? "—" : fmt(w),
    ($4 == "-") ? "—" : fmt(n), ($5 == "-") ? "—" : fmt(c), ratio(g, w), ratio(g, n), ratio(g, c), target, status)
  row(cells)
  gsub(/\|/, " | ", cells)
  print "| " cells " |" > md
}
END {
  if (val["wasmtime/tiny_call"] != "")
    printf "\nwasmtime tiny call: %s from Python, of which %s is what a call from Python costs\nbefore the module runs (call_floor, scripts/wasmtime/bench.py); the table shows the difference.\n",
      fmt(val["wasmtime/tiny_call"]), fmt(val["wasmtime/call_floor"])
  if (val["wasmtime/compile"] != "")
    printf "wasmtime: the module compiled or loaded from its cache in %s.\n", fmt(val["wasmtime/compile"])
  extra = ""
  for (k in goseen) if (!(k in used)) extra = extra sprintf("  %-40s %11s\n", k, fmt(val["go/" k]))
  if (extra != "") { print ""; print "other Go benchmarks:"; printf "%s", extra }
}' "$tmp/rows"

wasmtime_version=$(grep -o 'wasmtime==[^ ]*' "$requirements" | cut -d= -f3)
echo
echo "Markdown (for the README):"
echo
cat "$tmp/table.md"
echo
echo "Go: go test -bench (-benchtime $benchtime) on $(go env GOOS 2>/dev/null)/$(go env GOARCH 2>/dev/null); wasmtime: $wasmtime_version (Cranelift) through its Python wheel, tiny call less the Python host's per-call cost; native: monty $(grep -o '"monty_version": "[^"]*"' "$tmp/native.json" 2>/dev/null | sed 's/.*: "//; s/"//') built for the host; CPython: $([ -n "$python" ] && "$python" --version 2>&1); start times: medians of fresh processes; $(nproc 2>/dev/null || echo '?') CPUs."
exit "$failed"
