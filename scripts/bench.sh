#!/usr/bin/env bash
# Compares the Go runtime with monty run natively and with CPython on the
# same workloads (testdata/bench/*.py), and checks the performance targets.
#
#   scripts/bench.sh            # Go: -benchtime 2s; native and CPython: >= 1 s per workload
#   BENCHTIME=5s scripts/bench.sh
#
# Runs, in one go:
#   * the Go benchmarks of ./runtime (go test -run '^$' -bench . -benchtime 2s),
#   * scripts/native's `monty-native bench` (monty 1.4.0 compiled natively),
#   * CPython (python3) running the same files in-process with timeit, plus
#     `python3 -c '1+1'` in a subprocess for the per-process start cost.
# Prints a table (workload, Go, native, CPython, Go/native, target, met?),
# then the same table as markdown for the README. Exits non-zero if a part
# could not run (the table still shows the rest).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
benchtime=${BENCHTIME:-2s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
: >"$tmp/results" # lines: "<source> <key> <ns/op>"

# --- Go ---------------------------------------------------------------------
if command -v go >/dev/null; then
  export MONTY_CACHE_DIR=${MONTY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/wazero}
  mkdir -p "$MONTY_CACHE_DIR"
  echo "bench.sh: go test -run '^\$' -bench . -benchtime $benchtime ./runtime/" >&2
  if go test -run '^$' -bench . -benchtime "$benchtime" ./runtime/ >"$tmp/go.txt" 2>&1; then
    cat "$tmp/go.txt" >&2
  else
    cat "$tmp/go.txt" >&2
    echo "bench.sh: the Go benchmarks failed (output above)" >&2
    failed=1
  fi
  # "BenchmarkTinyCall-8   1000   1234 ns/op ..." -> "go TinyCall 1234"
  awk '$1 ~ /^Benchmark/ { for (i = 3; i < NF; i++) if ($(i + 1) == "ns/op") {
         name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
         print "go", name, $i } }' "$tmp/go.txt" >>"$tmp/results"
else
  echo "bench.sh: go not found; skipping the Go benchmarks" >&2
  failed=1
fi

# --- native -----------------------------------------------------------------
if native_bin=$(scripts/native/build.sh); then
  echo "bench.sh: $native_bin bench" >&2
  if "$native_bin" bench --dir testdata/bench >"$tmp/native.json"; then
    cat "$tmp/native.json" >&2
    # {"tiny_call": {"ns_per_op": 696.6, ...}, ...} -> "native tiny_call 696.6"
    grep -o '"[a-z0-9_]*": {"ns_per_op": [0-9.e+]*' "$tmp/native.json" |
      sed 's/^"\([a-z0-9_]*\)": {"ns_per_op": \(.*\)$/native \1 \2/' >>"$tmp/results"
  else
    echo "bench.sh: monty-native bench failed" >&2
    failed=1
  fi
else
  echo "bench.sh: could not build scripts/native; skipping the native column" >&2
  failed=1
fi

# --- CPython ----------------------------------------------------------------
if command -v python3 >/dev/null; then
  echo "bench.sh: $(python3 --version 2>&1) with timeit" >&2
  if ! python3 - testdata/bench >>"$tmp/results" <<'PY'; then
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
print('cpython dump_load_1mb', per_op(lambda: pickle.loads(pickle.dumps(data))))
print('cpython fresh_process', process_per_op())
PY
    echo "bench.sh: the CPython measurements failed" >&2
    failed=1
  fi
else
  echo "bench.sh: python3 not found; skipping the CPython column" >&2
  failed=1
fi

# --- table ------------------------------------------------------------------
# Rows: label | Go benchmark | native key | CPython key | target kind | target value
#   ratio:X  -> Go/native <= X;  abs:N -> Go ns/op <= N
cat >"$tmp/rows" <<'EOF'
tiny call (1 + 1)|TinyCall|tiny_call|tiny|ratio|3
fib(25)|Fib25|fib25|fib25|ratio|1.5
pool get|PoolGet|-|-|abs|100000
fresh instantiate|NewInterpreter|new_repl|-|abs|1000000
first result, fresh process (warm cache)|FirstResultFreshProcess|-|fresh_process|abs|50000000
REPL dump+load, 1 MB|REPLDumpLoad1MB|repl_dump_load_1mb|dump_load_1mb|abs|5000000
EOF

awk -F'|' -v results="$tmp/results" -v md="$tmp/table.md" '
function fmt(ns) {
  if (ns == "") return "n/a"
  if (ns >= 1e9) return sprintf("%.2f s", ns / 1e9)
  if (ns >= 1e6) return sprintf("%.2f ms", ns / 1e6)
  if (ns >= 1e3) return sprintf("%.2f µs", ns / 1e3)
  return sprintf("%.0f ns", ns)
}
BEGIN {
  while ((getline line < results) > 0) {
    split(line, f, " ")
    val[f[1] "/" f[2]] = f[3]
    if (f[1] == "go") goseen[f[2]] = 1
  }
  hdr = sprintf("%-42s %11s %11s %11s %9s  %-22s %s", "workload", "Go", "native", "CPython", "Go/native", "target", "status")
  print hdr
  print "| workload | Go | native | CPython | Go/native | target | status |" > md
  print "|---|---:|---:|---:|---:|---|---|" > md
}
{
  g = val["go/" $2]; n = ($3 == "-") ? "" : val["native/" $3]; c = ($4 == "-") ? "" : val["cpython/" $4]
  used[$2] = 1
  ratio = (g != "" && n != "") ? sprintf("%.2f×", g / n) : "n/a"
  if ($5 == "ratio") {
    target = sprintf("≤ %s× native", $6)
    status = (g == "" || n == "") ? "unknown" : ((g / n <= $6 + 0) ? "met" : "MISSED")
  } else {
    target = "≤ " fmt($6)
    status = (g == "") ? "unknown" : ((g + 0 <= $6 + 0) ? "met" : "MISSED")
  }
  printf "%-42s %11s %11s %11s %9s  %-22s %s\n", $1, fmt(g), fmt(n), fmt(c), ratio, target, status
  printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, fmt(g), fmt(n), fmt(c), ratio, target, status > md
}
END {
  extra = ""
  for (k in goseen) if (!(k in used)) extra = extra sprintf("  %-40s %11s\n", k, fmt(val["go/" k]))
  if (extra != "") { print ""; print "other Go benchmarks:"; printf "%s", extra }
}' "$tmp/rows"

echo
echo "Markdown (for the README):"
echo
cat "$tmp/table.md"
echo
echo "Go: go test -bench (-benchtime $benchtime) on $(go env GOOS 2>/dev/null)/$(go env GOARCH 2>/dev/null); native: monty $(grep -o '"monty_version": "[^"]*"' "$tmp/native.json" 2>/dev/null | sed 's/.*: "//; s/"//') built for the host; CPython: $(python3 --version 2>&1); $(nproc 2>/dev/null || echo '?') CPUs."
exit "$failed"
