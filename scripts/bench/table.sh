#!/usr/bin/env bash
# Compares the Go runtime with upstream Monty's release binary, with the same
# module under wasmtime, with monty run natively and with CPython on the same
# workloads (testdata/bench/*.py), measured interleaved; times the monty
# command's start and its memory, and checks the performance targets.
#
#   scripts/bench/table.sh            # each workload measured for >= 3 s (all columns)
#   BENCHTIME=10s scripts/bench/table.sh
#   MONTY_BENCH_AOT=1 scripts/bench/table.sh   # then scripts/bench/aot.sh too: the
#                               # kernels on the ahead-of-time engine against
#                               # wazero
#   MONTY_BENCH_AOT=0 scripts/bench/table.sh   # without the CLI on the ahead-of-time
#                               # engine (its first build needs about 13 GB)
#
# One command on a fresh machine: it first installs what it needs, saying so
# once per step: the pinned Rust toolchain when no Rust 1.96 is there
# (scripts/install-toolchain.sh, for the native column) and a Python venv
# in ${XDG_CACHE_HOME:-~/.cache}/monty-go/bench-venv with wasmtime and
# upstream's `monty` binary (scripts/bench/wasmtime/requirements.txt, recreated
# when that file changes).
#
# Runs, in one go:
#   * scripts/bench/benchcmp: each workload in every column that runs it,
#     interleaved: rounds of one sample per column, round-robin, each round
#     starting at the next column, so that a slow spell of this shared
#     machine falls on all columns alike; a column's figure is the median of
#     its samples, and every column must compute the same value. The columns:
#       Go        this runtime in benchcmp's own process (a warm
#                 interpreter, the program compiled once, one Run per run)
#       AOT       the same on the ahead-of-time engine (the module
#                 translated to Go, wasm/aot; benchcmp built by
#                 scripts/aotgo.sh; MONTY_BENCH_AOT=0 leaves it out)
#       wasmtime  scripts/bench/wasmtime/bench.py --serve: the committed
#                 wasm/monty.wasm under wasmtime (Cranelift) through its
#                 Python wheel, speaking the module's ABI as runtime/ does:
#                 the engine's share of the gap to native
#       native    scripts/native's `monty-native serve` (monty 1.4.0
#                 compiled for the host, in-process)
#       upstream  upstream Monty's release binary (`monty FILE.py`, from
#                 the pydantic-monty-runtime wheel), measured warm like the
#                 columns above: the program's second copy in one process
#                 (a file holding it twice less one holding it once after
#                 a copy compiled but not run), sampled in the same rounds;
#                 first runs, as whole processes: bench.sh processes
#       CPython   scripts/bench/benchcmp/cpython.py: python3 running the same
#                 files in-process
#   * the CLI releases ship, on the ahead-of-time engine (make monty-aot;
#     MONTY_BENCH_AOT_BIN=PATH to use one built already, MONTY_BENCH_AOT=0
#     to leave it out): its start, idle memory and first type check
#     beside the others in bench_start.py, and as a pydantic-monty worker;
#   * scripts/bench/worker.py: a new pydantic-monty pool to its first
#     result, plain and type-checked, on upstream's worker, the AOT CLI and
#     the wazero CLI, interleaved;
#   * scripts/bench/start.py with the monty command built from ./cmd/monty:
#     `monty -c 'print(1)'` against upstream's and `python3 -c 'print(1)'`
#     and the peak memory of each one's `-c 'pass'` (warm cache, median of
#     15, interleaved), then the first result of `monty serve`, `monty mcp`
#     and `monty -c` with a fresh, empty MONTY_CACHE_DIR (median of 3; -c
#     once).
#   * a session continued snippet after snippet, at its 10th, 300th and
#     1,000th snippet, through the Go API, POST /exec and MCP (the Go
#     benchmarks BenchmarkContinueSession), with the dump, load and opening
#     of a session of each size, against upstream's worker fed the same
#     snippets (scripts/bench/session.py), in rounds (SESSION_ROUNDS, 5;
#     SESSION_BENCHTIME, 20x: the snippets a benchmark times per round);
#     then the memory of `monty serve` holding 1,000 live sessions of 100
#     snippets against upstream's worker (scripts/bench/memory.py). Both
#     need scripts/pyclients.sh's venv (pydantic-monty, from PyPI).
# Prints a table (workload, Go, AOT and the other columns, the ratios of Go
# to each and of AOT to upstream, targets, met?), then the same table as
# markdown for docs/performance.md. Exits non-zero if a part could not run
# (the table still shows the rest).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$repo" || exit 1
benchtime=${BENCHTIME:-3s}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/monty-go
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
: >"$tmp/results" # lines: "<source> <key> <value>" (ns, or bytes for *_rss and *_idle)


# The compiled-module cache of the warm measurements (the Go column, monty -c):
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

# The bench venv, (re)made when it is missing, broken (its Python gone) or
# its requirements changed; $venv/requirements.txt records what it holds.
# Upstream's binary comes in a manylinux x86_64 wheel: where that cannot
# install, the venv gets wasmtime alone and the upstream column is missing.
venv=$cache_root/bench-venv
requirements=scripts/bench/wasmtime/requirements.txt
upstream=$venv/bin/monty
venv_ok() {
  cmp -s "$requirements" "$venv/requirements.txt" && "$venv/bin/python" -c 'import wasmtime' 2>/dev/null
}
if [ -n "$python" ] && ! venv_ok; then
  say "creating the bench venv $venv ($python -m venv; pip install -r $requirements)"
  mkdir -p "$cache_root"
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  if "$python" -m venv --clear "$venv" && {
    "${pip[@]}" -r "$requirements" || {
      say "pip install -r $requirements failed; installing wasmtime alone"
      "${pip[@]}" "$(grep -o '^wasmtime==[^ ]*' "$requirements")"
    }
  }; then
    cp "$requirements" "$venv/requirements.txt" # the stamp: installed as listed, or as far as it can be
  else
    say "could not create the venv; the wasmtime and upstream columns will be missing"
  fi
fi

# --- the columns --------------------------------------------------------------
benchcmp=(-benchtime "$benchtime")
if venv_ok; then
  # Cranelift takes a while to compile the module: its machine code is kept
  # in $cache_root/wasmtime, keyed by the module's hash and wasmtime version.
  benchcmp+=(-wasmtime "$venv/bin/python" -wasmtime-cache "$cache_root/wasmtime")
else
  say "no bench venv; the wasmtime column is missing"
  failed=1
fi
if [ -x "$upstream" ] && upstream_version=$("$upstream" --version 2>&1); then
  benchcmp+=(-upstream "$upstream")
else
  say "no upstream monty binary ($upstream: pydantic-monty-runtime is not installed there); the upstream column is missing"
  upstream=""
  failed=1
fi
if native_bin=$(scripts/native/build.sh); then
  benchcmp+=(-native "$native_bin")
else
  say "could not build scripts/native; the native column is missing"
  failed=1
fi
if [ -n "$python" ]; then
  benchcmp+=(-python "$python")
else
  say "python3 not found; the CPython and wasmtime columns and the start-time rows are missing"
  failed=1
fi

# --- the workloads, interleaved -------------------------------------------------
# With the AOT column (unless MONTY_BENCH_AOT=0), the workloads run in
# scripts/bench/benchcmp built by scripts/aotgo.sh: its go column on wazero, its
# aot column on the module translated to Go. Its first build compiles the
# translated packages (a few minutes); Go's build cache keeps them.
if command -v go >/dev/null; then
  say "go build ./scripts/bench/benchcmp ./cmd/monty"
  if go build -o "$tmp/benchcmp" ./scripts/bench/benchcmp && go build -o "$tmp/monty" ./cmd/monty; then
    workloads=$tmp/benchcmp
    if [ "${MONTY_BENCH_AOT:-1}" != 0 ]; then
      say "scripts/aotgo.sh build ./scripts/bench/benchcmp (the AOT column; the first build compiles the translated packages: a few minutes)"
      if make -s aot >&2 && scripts/aotgo.sh build -o "$tmp/benchcmp-aot" ./scripts/bench/benchcmp; then
        workloads=$tmp/benchcmp-aot
      else
        say "could not build scripts/bench/benchcmp on the ahead-of-time engine; the AOT column is missing"
        failed=1
      fi
    fi
    say "scripts/bench/benchcmp ${benchcmp[*]}"
    if ! "$workloads" "${benchcmp[@]}" >>"$tmp/results"; then
      say "some measurements failed (above)"
      failed=1
    fi
  else
    say "could not build scripts/bench/benchcmp or ./cmd/monty"
    failed=1
  fi
else
  say "go not found; only the table's frame is left"
  failed=1
fi

# --- the CLI releases ship: the ahead-of-time engine --------------------------
# make monty-aot: the first build on a machine compiles both translated
# packages (about 10 and 13 GB, one at a time; many minutes on 2 cores);
# Go's build cache keeps them. MONTY_BENCH_AOT_BIN=PATH uses a CLI built
# already; MONTY_BENCH_AOT=0 leaves the AOT rows out.
aot_bin=""
if [ "${MONTY_BENCH_AOT:-1}" != 0 ]; then
  if [ -n "${MONTY_BENCH_AOT_BIN:-}" ]; then
    aot_bin=$MONTY_BENCH_AOT_BIN
  else
    say "make monty-aot (the CLI on the ahead-of-time engine; its first build takes many minutes and about 13 GB)"
    if make -s monty-aot AOT_BIN="$tmp/monty-aot" >&2; then
      aot_bin=$tmp/monty-aot
    else
      say "make monty-aot failed; the AOT rows are missing"
      failed=1
    fi
  fi
fi

# --- start time -------------------------------------------------------------
if [ -x "$tmp/monty" ] && [ -n "$python" ]; then
  say "scripts/bench/start.py: monty -c vs upstream's and python3 -c, and their memory (warm cache), then serve, mcp and -c with no cache (about a minute)"
  if ! "$python" scripts/bench/start.py "$tmp/monty" "$warm_cache" --rss-helper "$tmp/benchcmp" \
    ${aot_bin:+--aot "$aot_bin"} ${upstream:+--upstream "$upstream"} >>"$tmp/results"; then
    say "some start-time measurements failed (above)"
    failed=1
  fi
fi

# --- a new pydantic-monty worker to its first result ----------------------------
# What an integration that opens a pool per call pays: upstream's worker,
# ours on the ahead-of-time engine and ours on wazero, interleaved
# (scripts/bench/worker.py, from scripts/pyclients.sh's venv).
if [ -x "$tmp/monty" ]; then
  if pyclients_env=$(scripts/pyclients.sh env) && eval "$pyclients_env"; then
    workers=(wazero="$tmp/monty")
    [ -n "$aot_bin" ] && workers+=(aot="$aot_bin")
    upstream_worker=$(dirname "$MONTY_TEST_PYTHON")/monty
    [ -x "$upstream_worker" ] && workers+=(upstream="$upstream_worker")
    say "scripts/bench/worker.py: a new pool, a checkout and feed_run('1 + 1'), plain and type-checked: ${workers[*]%%=*}"
    if ! MONTY_CACHE_DIR=$warm_cache "$MONTY_TEST_PYTHON" scripts/bench/worker.py "${workers[@]}" >>"$tmp/results"; then
      say "scripts/bench/worker.py failed (above)"
      failed=1
    fi
  else
    say "no pydantic-monty (scripts/pyclients.sh); the worker rows are missing"
    failed=1
  fi
fi

# --- continuing sessions and their memory --------------------------------------
# One session continued snippet after snippet (session/internal/sessionbench:
# each snippet defines a small function and computes a value): the Go
# benchmarks BenchmarkContinueSession of ./session (the Go API, a Manager
# over a directory store), ./session/httpapi (POST /exec) and
# ./session/mcpserver (execute_python), each timing the snippets after the
# 10th, 300th and 1,000th; ./session's BenchmarkREPLDump, BenchmarkREPLLoad
# and BenchmarkSessionOpen at the same sizes; and upstream's worker fed the
# same snippets through pydantic-monty (scripts/bench/session.py, from
# scripts/pyclients.sh's venv). In rounds: every test binary once (its
# sizes one after another), then upstream's; a figure is the median of its
# rounds. The sessions are built in the first round and kept in
# $tmp/sessions for the others. Then scripts/bench/memory.py: `monty serve`
# holding 1,000 live sessions of 100 snippets against upstream's worker.
session_rounds=${SESSION_ROUNDS:-5}
: >"$tmp/session_rounds" # lines: "<source> <key> <ns>", one per round

# gobench PACKAGE KEYS REGEXP: runs the benchmarks matching REGEXP of the
# test binary of PACKAGE (its directory, built below as
# $tmp/DIR.test with "/" as "+"), in that directory, and writes "session
# KEY_N NS" for each sub-benchmark NAME/snippet=N, where KEYS maps NAME to
# KEY ("ContinueSession=api SessionOpen=open").
gobench() {
  local pkg=$1 keys=$2 regexp=$3
  (cd "$pkg" && MONTY_BENCH_CACHE=$tmp/sessions "$tmp/${pkg//\//+}.test" -test.run '^$' -test.bench "$regexp" \
    -test.benchtime "${SESSION_BENCHTIME:-20x}") >"$tmp/gobench.out" || {
    cat "$tmp/gobench.out" >&2
    return 1
  }
  awk -v keys="$keys" '
    BEGIN { n = split(keys, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); key[p[1]] = p[2] } }
    $1 ~ /^Benchmark.*\/snippet=[0-9]+-[0-9]+$/ && $4 == "ns/op" {
      name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
      split(name, part, "/snippet=")
      if (part[1] in key) print "session", key[part[1]] "_" part[2], $3
    }' "$tmp/gobench.out"
}

if command -v go >/dev/null && [ -x "$tmp/monty" ]; then
  say "go test -c ./session ./session/httpapi ./session/mcpserver"
  if go test -c -o "$tmp/session.test" ./session &&
    go test -c -o "$tmp/session+httpapi.test" ./session/httpapi &&
    go test -c -o "$tmp/session+mcpserver.test" ./session/mcpserver; then
    pyclients=""
    if pyclients_env=$(scripts/pyclients.sh env) && eval "$pyclients_env"; then
      pyclients=$MONTY_TEST_PYTHON
    else
      say "no pydantic-monty (scripts/pyclients.sh); the continuing sessions' upstream column and the memory rows are missing"
      failed=1
    fi
    for round in $(seq "$session_rounds"); do
      say "continuing sessions, round $round of $session_rounds: Go API, POST /exec, MCP, upstream's worker$([ "$round" = 1 ] && echo ' (building the sessions first: a few seconds, or minutes while a call costs more with every snippet)')"
      gobench session "ContinueSession=api REPLDump=dump REPLLoad=load SessionOpen=open" \
        '^Benchmark(ContinueSession|REPLDump|REPLLoad|SessionOpen)$' >>"$tmp/session_rounds" &&
        gobench session/httpapi "ContinueSession=http" '^BenchmarkContinueSession$' >>"$tmp/session_rounds" &&
        gobench session/mcpserver "ContinueSession=mcp" '^BenchmarkContinueSession$' >>"$tmp/session_rounds" || {
        say "a continuing-session benchmark failed (above)"
        failed=1
        break
      }
      if [ -n "$pyclients" ] && ! "$pyclients" scripts/bench/session.py "$(dirname "$pyclients")/monty" >>"$tmp/session_rounds"; then
        say "scripts/bench/session.py failed; the continuing sessions' upstream column is missing"
        pyclients=""
        failed=1
      fi
    done
    # The median of each figure's rounds.
    sort -k1,1 -k2,2 -k3,3g "$tmp/session_rounds" | awk '
      function flush() { if (n) printf "%s %s\n", k, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; n = 0 }
      { if ($1 " " $2 != k) { flush(); k = $1 " " $2 } v[++n] = $3 }
      END { flush() }' >>"$tmp/results"
    if [ -n "$pyclients" ]; then
      say "scripts/bench/memory.py: monty serve holding 1,000 live sessions of 100 snippets, against upstream's worker (a few minutes)"
      if ! "$pyclients" scripts/bench/memory.py "$tmp/monty" "$(dirname "$pyclients")/monty" >>"$tmp/results"; then
        say "scripts/bench/memory.py failed (above)"
        failed=1
      fi
    fi
  else
    say "could not build the session benchmarks"
    failed=1
  fi
fi

# --- table ------------------------------------------------------------------
# Rows: label | unit | Go | wasmtime | native | upstream | CPython | target |
# AOT target. The unit is ns or B (bytes). Each column is a "source/key" of
# the results ("-": none); the AOT column is the Go column's key on the
# ahead-of-time engine ("aot/KEY" for "go/KEY"; none for other rows). The
# targets are, for Go and for AOT,
#   COLUMN X  -> Go/COLUMN <= X (COLUMN: native, upstream or cpython);
#   abs N     -> Go <= N (in the unit);   -  -> none (a reference row);
#   of KEY X NAME -> Go <= X × the results' KEY ("source/key"), which the
#                target calls NAME (one word).
# "Go" is this runtime: scripts/bench/benchcmp's Go column (wazero), the monty command
# built from ./cmd/monty for the start-time and memory rows, the session
# benchmarks for the continuing-session rows (upstream: its worker through
# pydantic-monty, the round trip included: scripts/bench/session.py and
# scripts/bench/memory.py say what each figure is).
cat >"$tmp/rows" <<'EOF'
tiny call (1 + 1, warm interpreter)|ns|go/tiny|wasmtime/tiny|native/tiny|-|cpython/tiny|native 1.5|-
fib(25)|ns|go/fib25|wasmtime/fib25|native/fib25|upstream/fib25|cpython/fib25|upstream 1.5|upstream 1
loop of 1M iterations|ns|go/loop|wasmtime/loop|native/loop|upstream/loop|cpython/loop|upstream 1.5|upstream 1
sort 100k tuples|ns|go/sort|wasmtime/sort|native/sort|upstream/sort|cpython/sort|upstream 1.5|upstream 1
join 100k pieces|ns|go/join|wasmtime/join|native/join|upstream/join|cpython/join|upstream 1.5|upstream 1
count 200k words in a dict|ns|go/words|wasmtime/words|native/words|upstream/words|cpython/words|upstream 1.5|upstream 1
fannkuch, permutations of 6|ns|go/fannkuch|wasmtime/fannkuch|native/fannkuch|upstream/fannkuch|cpython/fannkuch|upstream 1.5|upstream 1
spectral norm, 20×20, 10 steps|ns|go/spectral_norm|wasmtime/spectral_norm|native/spectral_norm|upstream/spectral_norm|cpython/spectral_norm|upstream 1.5|upstream 1
n-body, 5 bodies, 300 steps|ns|go/nbody|wasmtime/nbody|native/nbody|upstream/nbody|cpython/nbody|upstream 1.5|upstream 1
Barnes-Hut quadtree, 60 bodies|ns|go/barnes_hut|wasmtime/barnes_hut|native/barnes_hut|upstream/barnes_hut|cpython/barnes_hut|upstream 1.5|upstream 1
float: 1,500 points normalized|ns|go/float|wasmtime/float|native/float|upstream/float|cpython/float|upstream 1.5|upstream 1
unpack sequences, 5k rounds|ns|go/unpack_sequence|wasmtime/unpack_sequence|native/unpack_sequence|upstream/unpack_sequence|cpython/unpack_sequence|upstream 1.5|upstream 1
json.dumps, 300 records ×10|ns|go/json_dumps|wasmtime/json_dumps|native/json_dumps|upstream/json_dumps|cpython/json_dumps|upstream 1.5|upstream 1
json.loads, 47 KB ×5|ns|go/json_loads|wasmtime/json_loads|native/json_loads|upstream/json_loads|cpython/json_loads|upstream 1.5|upstream 1
gc traversal, 2k live, 100k dropped|ns|go/gc_traversal|wasmtime/gc_traversal|native/gc_traversal|upstream/gc_traversal|cpython/gc_traversal|upstream 1.5|upstream 1
aggregate 2,000 rows by key|ns|go/aggregate|wasmtime/aggregate|native/aggregate|upstream/aggregate|cpython/aggregate|upstream 1.5|upstream 1
f-string report, 1,500 lines|ns|go/fstring_report|wasmtime/fstring_report|native/fstring_report|upstream/fstring_report|cpython/fstring_report|upstream 1.5|upstream 1
parse 600 log lines|ns|go/parse_strings|wasmtime/parse_strings|native/parse_strings|upstream/parse_strings|cpython/parse_strings|upstream 1.5|upstream 1
datetime arithmetic, 2,000 dates|ns|go/datetime_math|wasmtime/datetime_math|native/datetime_math|upstream/datetime_math|cpython/datetime_math|upstream 1.5|upstream 1
regex extraction, 1,000 lines|ns|go/regex_extract|wasmtime/regex_extract|native/regex_extract|upstream/regex_extract|cpython/regex_extract|upstream 1.5|upstream 1
pool get|ns|go/pool_get|-|-|-|-|abs 100000|-
fresh instantiate|ns|go/new_interpreter|wasmtime/new_interpreter|native/new_interpreter|-|-|abs 1000000|-
REPL dump+load, 1 MB|ns|go/dump_load_1mb|wasmtime/dump_load_1mb|native/dump_load_1mb|-|cpython/dump_load_1mb|abs 5000000|-
first result, fresh process (warm cache)|ns|go/first_result|-|-|-|cpython/first_result|abs 50000000|-
monty -c 'print(1)', warm cache|ns|start/monty_c|-|-|start/upstream_c|start/python_c|cpython 3|-
idle RSS, monty -c waiting after its first print|B|start/monty_idle|-|-|start/upstream_idle|start/python_idle|abs 52428800|-
peak RSS, monty -c 'pass'|B|start/monty_rss|-|-|start/upstream_rss|start/python_rss|-|-
monty check -c 'print(1)', warm cache|ns|start/check_c|-|-|-|-|-|-
AOT CLI: monty -c 'print(1)'|ns|start/aot_c|-|-|start/upstream_c|start/python_c|upstream 3|-
AOT CLI: monty check -c 'print(1)'|ns|start/aot_check_c|-|-|-|-|-|-
AOT CLI: idle RSS after its first print|B|start/aot_idle|-|-|start/upstream_idle|start/python_idle|abs 26214400|-
AOT CLI: peak RSS, monty -c 'pass'|B|start/aot_rss|-|-|start/upstream_rss|start/python_rss|-|-
new pydantic-monty worker to feed_run('1 + 1'), AOT CLI|ns|worker/aot_first|-|-|worker/upstream_first|-|upstream 3|-
same, type-checked (checkout(type_check=True)), AOT CLI|ns|worker/aot_typed|-|-|worker/upstream_typed|-|upstream 10|-
new pydantic-monty worker to feed_run('1 + 1'), wazero CLI|ns|worker/wazero_first|-|-|worker/upstream_first|-|-|-
same, type-checked, wazero CLI|ns|worker/wazero_typed|-|-|worker/upstream_typed|-|-|-
first result, no cache: monty serve|ns|start/serve_cold|-|-|-|-|abs 2000000000|-
first result, no cache: monty mcp|ns|start/mcp_cold|-|-|-|-|abs 2000000000|-
monty -c 'print(1)', no cache (compiles)|ns|start/cli_cold|-|-|-|-|-|-
Go API: snippet 10 of a session|ns|session/api_10|-|-|upstream/feed_10|-|-|-
Go API: snippet 300 of a session|ns|session/api_300|-|-|upstream/feed_300|-|of session/api_10 1.5 10th|-
Go API: snippet 1,000 of a session|ns|session/api_1000|-|-|upstream/feed_1000|-|of session/api_10 1.5 10th|-
POST /exec: snippet 10 of a session|ns|session/http_10|-|-|upstream/feed_10|-|-|-
POST /exec: snippet 300 of a session|ns|session/http_300|-|-|upstream/feed_300|-|of session/http_10 1.5 10th|-
POST /exec: snippet 1,000 of a session|ns|session/http_1000|-|-|upstream/feed_1000|-|of session/http_10 1.5 10th|-
MCP: snippet 10 of a session|ns|session/mcp_10|-|-|upstream/feed_10|-|-|-
MCP: snippet 300 of a session|ns|session/mcp_300|-|-|upstream/feed_300|-|of session/mcp_10 1.5 10th|-
MCP: snippet 1,000 of a session|ns|session/mcp_1000|-|-|upstream/feed_1000|-|of session/mcp_10 1.5 10th|-
dump of a session of 10 snippets|ns|session/dump_10|-|-|upstream/dump_10|-|-|-
dump of a session of 300 snippets|ns|session/dump_300|-|-|upstream/dump_300|-|-|-
dump of a session of 1,000 snippets|ns|session/dump_1000|-|-|upstream/dump_1000|-|-|-
load of a session of 10 snippets|ns|session/load_10|-|-|upstream/load_10|-|-|-
load of a session of 300 snippets|ns|session/load_300|-|-|upstream/load_300|-|-|-
load of a session of 1,000 snippets|ns|session/load_1000|-|-|upstream/load_1000|-|-|-
open a stored session of 10 snippets|ns|session/open_10|-|-|-|-|-|-
open a stored session of 300 snippets|ns|session/open_300|-|-|-|-|-|-
open a stored session of 1,000 snippets|ns|session/open_1000|-|-|-|-|-|-
RSS, 1,000 live sessions of 100 snippets|B|memory/serve_rss|-|-|-|-|-|-
RSS per live session of 100 snippets|B|memory/serve_session|-|-|memory/upstream_session|-|-|-
bytes stored per session of 100 snippets|B|memory/serve_stored|-|-|memory/upstream_stored|-|-|-
EOF

awk -F'|' -v results="$tmp/results" -v md="$tmp/table.md" '
function fmt(v, unit) {
  if (v == "") return "n/a"
  if (unit == "B") return (v < 1048576) ? sprintf("%.1f KiB", v / 1024) : sprintf("%.1f MiB", v / 1048576)
  if (v >= 1e9) return sprintf("%.2f s", v / 1e9)
  if (v >= 1e6) return sprintf("%.2f ms", v / 1e6)
  if (v >= 1e3) return sprintf("%.2f µs", v / 1e3)
  return sprintf("%.0f ns", v)
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
  for (i = 1; i <= 16; i++) {
    w = widths[i] + 0
    out = out ((i > 1) ? ((i == 13 || i == 15) ? "  " : " ") : "") ((w < 0) ? pad(cell[i], -w, 1) : pad(cell[i], w, 0))
  }
  print out
}
function get(spec) { return (spec == "-") ? "" : val[spec] }
function cell(spec, v, unit) { return (spec == "-") ? "—" : fmt(v, unit) }
function ratio(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2f×", a / b) : "—" }
BEGIN {
  while ((getline line < results) > 0) {
    split(line, f, " ")
    val[f[1] "/" f[2]] = f[3]
  }
  split("-40 10 10 10 10 10 10 8 8 8 8 9 -15 -7 -15 0", widths, " ")
  row("workload|Go|AOT|wasmtime|native|upstream|CPython|Go/wasmt|Go/nat|Go/upstr|Go/CPy|AOT/upstr|target|status|AOT target|AOT status")
  print "| workload | Go | AOT | wasmtime | native | upstream | CPython | Go/wasmtime | Go/native | Go/upstream | Go/CPython | AOT/upstream | target | status | AOT target | AOT status |" > md
  print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|" > md
  column["native"] = 5; column["upstream"] = 6; column["cpython"] = 7
  label["native"] = "native"; label["upstream"] = "upstream"; label["cpython"] = "CPython"
}
# target(SPEC, G): the target SPEC of a row for the figure G, as
# "text|status" (v: the columns of the row).
function target(spec, g,   t, other) {
  split(spec, t, " ")
  if (t[1] in column) {
    other = v[column[t[1]]]
    return sprintf("≤ %s× %s|%s", t[2], label[t[1]], (g == "" || other == "") ? "unknown" : ((g / other <= t[2] + 0) ? "met" : "MISSED"))
  }
  if (t[1] == "of") {
    other = val[t[2]]
    return sprintf("≤ %s× %s|%s", t[3], t[4], (g == "" || other == "") ? "unknown" : ((g / other <= t[3] + 0) ? "met" : "MISSED"))
  }
  if (t[1] == "abs")
    return sprintf("≤ %s|%s", fmt(t[2], unit), (g == "") ? "unknown" : ((g + 0 <= t[2] + 0) ? "met" : "MISSED"))
  return (spec == "-" && g == "") ? "—|—" : "(reference)|—"
}
{
  unit = $2
  for (i = 3; i <= 7; i++) v[i] = get($i)
  g = v[3]
  aot_spec = ($3 ~ /^go\//) ? "aot/" substr($3, 4) : "-"
  a = get(aot_spec)
  cells = sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s", $1, fmt(g, unit), cell(aot_spec, a, unit),
    cell($4, v[4], unit), cell($5, v[5], unit), cell($6, v[6], unit), cell($7, v[7], unit),
    ratio(g, v[4]), ratio(g, v[5]), ratio(g, v[6]), ratio(g, v[7]), ratio(a, v[6]), target($8, g), target($9, a))
  row(cells)
  gsub(/\|/, " | ", cells)
  print "| " cells " |" > md
}
END {
  print ""
  if (val["wasmtime/call_floor"] != "")
    printf "wasmtime: the tiny call less %s, what a call costs from Python before the module runs (call_floor).\n",
      fmt(val["wasmtime/call_floor"])
}' "$tmp/rows"

wasmtime_version=$(grep -o '^wasmtime==[^ ]*' "$requirements" | cut -d= -f3)
native_version=$(sed -n 's/^monty = "=\(.*\)"/\1/p' scripts/native/Cargo.toml)
echo
echo "Markdown (for docs/performance.md):"
echo
cat "$tmp/table.md"
echo
echo "Interleaved (scripts/bench/benchcmp: each workload for >= $benchtime, medians) on $(go env GOOS 2>/dev/null)/$(go env GOARCH 2>/dev/null), $(nproc 2>/dev/null || echo '?') CPUs. Go: this runtime in-process, on wazero; AOT: the same on the ahead-of-time engine; wasmtime: $wasmtime_version (Cranelift) through its Python wheel, the tiny call less the Python host's per-call cost; native: monty $native_version built for the host; upstream: ${upstream_version:-missing}, the second copy of a program in one process (a file holding it twice less one holding it once, a process each); CPython: $([ -n "$python" ] && "$python" --version 2>&1); start times and memory: medians of fresh processes; continuing sessions: medians of $session_rounds rounds (Go: the mean of ${SESSION_BENCHTIME:-20x} snippets a round; upstream: pydantic-monty's client and worker, the round trip included); memory: scripts/bench/memory.py."
if [ "${MONTY_BENCH_AOT:-}" = 1 ]; then
  echo
  echo "The ahead-of-time engine (scripts/bench/aot.sh):"
  scripts/bench/aot.sh || failed=1
fi
say "done in ${SECONDS} s"
exit "$failed"
