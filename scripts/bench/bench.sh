#!/usr/bin/env bash
# The one entry of the benchmarks (docs/performance.md): every benchmark of
# the project is a part of this folder, run through here.
#
#   scripts/bench/bench.sh [WHAT] [ARGS...]      # `make bench` runs `table`
#
# WHAT, and what it measures (each part's header says more, and its ARGS):
#   table       the runtime on wazero and ahead of time against wasmtime,
#               Monty built natively, upstream's release and CPython on
#               testdata/bench; start times, memory, continuing sessions,
#               the targets (table.sh; the tables of docs/performance.md)
#   aot         the ahead-of-time engine against wazero, interleaved (aot.sh)
#   profile     one kernel on the ahead-of-time engine under pprof, with
#               the interpreter's Rust functions named (profile.sh)
#   aot-ab      two builds of benchcmp on the ahead-of-time engine, A B A B
#               (aot_ab.py)
#   processes   the kernels as whole processes: the CLI on the ahead-of-time
#               engine against upstream's binary, each less an empty file's
#               run, interleaved (processes.py)
#   module-ab   release profiles and codegen features of the module, built
#               and scored in one run (module-ab.sh, moduleab/)
#   build-cost  what the ahead-of-time CLI costs to build and to carry
#               (build-cost.sh, buildcost.py)
#   montyv1     monty.v1 through pydantic-monty against upstream's worker
#               (montyv1.sh, montyv1.py)
#   turns       what a stored turn costs: monty.v1 and /exec writes and
#               reads per store, two builds interleaved (turns.sh, turns.py)
#   load        POST /exec of monty serve under load (load.sh, load/)
#   container   the serverless images' cold start, as root (container.sh,
#               serverless.py)
#
# The helpers of table: benchcmp/ (the interleaved Go, AOT, wasmtime,
# native and CPython columns), wasmtime/ (the module under wasmtime),
# start.py, worker.py, session.py and memory.py.
set -euo pipefail
here=$(dirname "$0")
what=${1:-table}
[ $# -gt 0 ] && shift
case $what in
  table | aot | profile | module-ab | build-cost | montyv1 | turns | load | container) exec "$here/$what.sh" "$@" ;;
  aot-ab) exec python3 "$here/aot_ab.py" "$@" ;;
  processes) exec python3 "$here/processes.py" "$@" ;;
  -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
  *)
    echo "bench: no benchmark $what; one of: table aot profile aot-ab processes module-ab build-cost montyv1 turns load container" >&2
    exit 2
    ;;
esac
