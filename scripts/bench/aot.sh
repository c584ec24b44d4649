#!/usr/bin/env bash
# The ahead-of-time engine (wasm/aot: the module translated to Go) against
# wazero, measured interleaved; scripts/bench/table.sh runs it when
# MONTY_BENCH_AOT=1, or run it alone:
#
#   scripts/bench/aot.sh        # BENCHTIME (3s) per kernel
#
# It needs what `make monty-aot` needs: a few minutes and about 1 GB of
# memory the first time the translated packages are compiled (Go's build
# cache keeps them; later runs link in seconds). It
#   * builds the CLI on each engine (make monty-aot, go build ./cmd/monty),
#     reporting the AOT build's peak memory and time (/usr/bin/time: a
#     cached build shows only the link) and both binaries' sizes;
#   * runs scripts/bench/start.py on the AOT CLI with the wazero CLI as its
#     baseline (warm cache): a fresh process to `print(1)`, the peak memory
#     of `-c 'pass'` and an idle process's memory, against python3, and the
#     idle memory of a program holding only an interpreter (benchcmp
#     -first-result -c, built on each engine);
#   * runs scripts/bench/benchcmp built by scripts/aotgo.sh: the kernels in its
#     go column (wazero) and its aot column, in one process, interleaved;
# and prints a markdown table with the targets: a fresh process to its first
# result no slower than python3 -c, idle memory at most 35 MiB, every kernel
# no slower than on wazero (the "met" column). Exits non-zero when a part
# could not run.
set -uo pipefail
tool=bench-aot
. "$(dirname "$0")/../lib.sh"
cd "$repo" || exit 1
benchtime=${BENCHTIME:-3s}
warm_cache=${MONTY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/compiled}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results # lines: "<source> <key> <value>"
python=$(command -v python3) || { say "python3 not found"; exit 1; }

say "make monty-aot (the first build compiles the translated packages: a few minutes)"
if ! /usr/bin/time -f 'build aot_peak %M\nbuild aot_seconds %e' -o "$tmp/buildcost" \
  make -s monty-aot AOT_BIN="$tmp/monty-aot" >&2; then
  say "make monty-aot failed"
  exit 1
fi
awk '{ if ($2 == "aot_peak") $3 *= 1024; print }' "$tmp/buildcost" >>"$results"
go build -ldflags=-w -o "$tmp/monty" ./cmd/monty || exit 1
go build -o "$tmp/benchcmp" ./scripts/bench/benchcmp || exit 1
scripts/aotgo.sh build -o "$tmp/benchcmp-aot" ./scripts/bench/benchcmp || exit 1
echo "build aot_size $(stat -c %s "$tmp/monty-aot")" >>"$results"
echo "build wazero_size $(stat -c %s "$tmp/monty")" >>"$results"

failed=0
say "scripts/bench/start.py: the AOT CLI, the wazero CLI as its baseline"
if ! "$python" scripts/bench/start.py "$tmp/monty-aot" "$warm_cache" --baseline "$tmp/monty" \
  --rss-helper "$tmp/benchcmp" --idle-program "$tmp/benchcmp-aot" --idle-program-base "$tmp/benchcmp" \
  --cold-runs 1 >>"$results"; then
  failed=1
fi
say "scripts/bench/benchcmp with the AOT module: go (wazero) and aot columns"
if ! "$tmp/benchcmp-aot" -benchtime "$benchtime" \
  -only tiny,fib25,loop,sort,join,words,fannkuch,nbody,json_loads,regex_extract,dump_load_1mb,new_interpreter,first_result \
  >>"$results"; then
  failed=1
fi

"$python" - "$results" <<'PY' || failed=1
import sys

vals = {}
for line in open(sys.argv[1]):
    src, key, value = line.split()
    vals[(src, key)] = float(value)

def get(src, key):
    return vals.get((src, key))

def dur(ns):
    if ns is None:
        return "–"
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.2f} µs"

def size(b):
    return "–" if b is None else f"{b / 2**20:.1f} MiB"

print("| | AOT | wazero | python3 | AOT/wazero | target | met |")
print("|---|---|---|---|---|---|---|")

def row(label, aot, wz, py, fmt, target, ok):
    ratio = f"{aot / wz:.2f}×" if aot and wz else "–"
    met = "–" if ok is None else ("yes" if ok else "NO")
    print(f"| {label} | {fmt(aot)} | {fmt(wz)} | {fmt(py)} | {ratio} | {target} | {met} |")

aot, wz, py = get("start", "monty_c"), get("start", "monty_c_base"), get("start", "python_c")
row("fresh process to `print(1)`", aot, wz, py, dur, "≤ 1× python3 -c", None if not (aot and py) else aot <= py)
aot, wz, py = get("start", "monty_rss"), get("start", "monty_rss_base"), get("start", "python_rss")
row("peak memory of `-c 'pass'`", aot, wz, py, size, "", None)
aot, wz, py = get("start", "monty_idle"), get("start", "monty_idle_base"), get("start", "python_idle")
row("idle memory after `print(1)`", aot, wz, py, size, "≤ 35 MiB", None if aot is None else aot <= 35 * 2**20)
aot, wz = get("start", "program_idle"), get("start", "program_idle_base")
row("idle memory after `print(1)`, a program holding only an interpreter (benchcmp)", aot, wz, None, size, "≤ 35 MiB",
    None if aot is None else aot <= 35 * 2**20)
for k in ["tiny", "fib25", "loop", "sort", "join", "words", "fannkuch", "nbody", "json_loads", "regex_extract",
          "dump_load_1mb", "new_interpreter", "first_result"]:
    aot, wz = get("aot", k), get("go", k)
    kernel = k not in ("new_interpreter", "first_result")
    row(k, aot, wz, None, dur, "≤ wazero" if kernel else "",
        None if not (kernel and aot and wz) else aot <= wz)
row("serve, fresh process to first `POST /exec`", get("start", "serve_cold"), None, None, dur, "", None)
row("mcp, fresh process to first tool call", get("start", "mcp_cold"), None, None, dur, "", None)
print()
print(f"Builder: `make monty-aot` peak memory {size(get('build', 'aot_peak'))}, "
      f"{get('build', 'aot_seconds') or 0:.0f} s (a cached build only links); "
      f"CLI binary {size(get('build', 'aot_size'))} (wazero: {size(get('build', 'wazero_size'))}), both with -ldflags=-w.")
PY
exit $failed
