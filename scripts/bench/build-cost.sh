#!/usr/bin/env bash
# Measures what the ahead-of-time CLI costs to build and to carry
# (docs/building.md#what-the-ahead-of-time-engine-costs):
#
#   scripts/bench/build-cost.sh [--wheel] [--image] [--worker] [--out DIR]
#
#  1. `make aot` (the translations generated and checked; not measured);
#  2. a fresh Go build cache (GOCACHE in a temporary directory) given the
#     dependencies: the CLI built on wazero with the flags and tags of
#     `make monty-aot`, so that everything but the translated packages is
#     cached, as on a machine that built monty-go before;
#  3. `make monty-aot` under scripts/bench/buildcost.py: wall time, CPU time and
#     the peak memory of the whole process tree (every concurrent compile
#     and the linker together);
#  4. the binary's size, and its sections and the share of the two
#     translations (from a copy linked without -s, which only the symbol
#     table distinguishes);
#  5. with --wheel, the linux/amd64 wheel of scripts/release.sh, and with
#     --image its OCI image (as root; from the same cache: they link only);
#  6. with --worker, a new pydantic-monty worker to its first result, plain
#     and type-checked, on this CLI and on its lean build (the monty_lean
#     tag, which the wheel carries) against upstream's
#     (scripts/bench/worker.py, with scripts/pyclients.sh's Python), and
#     each CLI's memory once it printed.
#
# The figures go to stdout, and as JSON into --out DIR (default a
# temporary directory, removed). The cache is removed at the end.
set -euo pipefail
tool=bench-build-cost
. "$(dirname "$0")/../lib.sh"
cd "$repo"
wheel=0 image=0 worker=0 out=
while [ $# -gt 0 ]; do
  case $1 in
  --wheel) wheel=1 ;;
  --image) image=1 ;;
  --worker) worker=1 ;;
  --out) out=$2; shift ;;
  *) die "usage: scripts/bench/build-cost.sh [--wheel] [--image] [--worker] [--out DIR]" ;;
  esac
  shift
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] || out=$tmp/out
mkdir -p "$out"

make -s aot
export GOCACHE=$tmp/gocache
say "a fresh Go build cache in $GOCACHE, given the dependencies (the CLI on wazero, the flags of make monty-aot)"
CGO_ENABLED=0 go build -trimpath -tags=monty_noembed,monty_checker_noembed -ldflags='-s -w' -o /dev/null ./cmd/monty

say "make monty-aot (the translated packages compile now)"
scripts/bench/buildcost.py --label "make monty-aot" --json "$out/build.json" -- make -s monty-aot AOT_BIN="$out/monty"
bin=$out/monty
size=$(stat -c %s "$bin")

# The sections and the translations' share, from the same build linked
# without -s (the flags otherwise those of make monty-aot: only the link
# runs again).
MONTY_AOT_NOEMBED=1 scripts/aotgo.sh build -ldflags=-w -o "$tmp/monty-symbols" ./cmd/monty
sections=$(readelf -SW "$tmp/monty-symbols" | sed -n 's/^ *\[ *[0-9]*\] *//p' |
  awk '$1 ~ /^\.(text|gopclntab|rodata|noptrdata|data)$/ { print $1, $5 }' |
  while read -r name hex; do echo "$name $((16#$hex))"; done)
translated=$(go tool nm -size "$tmp/monty-symbols" | awk '$4 ~ /wasm\/aot\/internal\/translated/ && $3 ~ /[Tt]/ { s += $2 } END { print s + 0 }')
checker=$(go tool nm -size "$tmp/monty-symbols" | awk '$4 ~ /wasm\/aot\/internal\/checker/ && $3 ~ /[Tt]/ { s += $2 } END { print s + 0 }')
{
  echo "binary $size"
  echo "$sections"
  echo "text_translated_interpreter $translated"
  echo "text_translated_checker $checker"
} | tee "$out/sizes.txt"

if [ "$wheel" = 1 ]; then
  say "the linux/amd64 wheel (scripts/release.sh wheel)"
  scripts/release.sh wheel --out "$out/wheel" --platform linux/amd64 >&2
  for w in "$out"/wheel/*.whl; do echo "wheel $(stat -c %s "$w") ${w##*/}"; done | tee -a "$out/sizes.txt"
fi

if [ "$image" = 1 ]; then
  say "the linux image (scripts/release.sh image)"
  scripts/release.sh image --out "$out/image" >&2
  for i in "$out"/image/*.oci.tar; do echo "image $(stat -c %s "$i") ${i##*/}"; done | tee -a "$out/sizes.txt"
fi

if [ "$worker" = 1 ]; then
  eval "$(scripts/pyclients.sh env)"
  upstream=$(dirname "$MONTY_TEST_PYTHON")/monty
  [ -x "$upstream" ] || die "upstream's worker (pydantic-monty-runtime) is not in $MONTY_TEST_PYTHON's environment: run scripts/pyclients.sh"
  say "a new pydantic-monty worker to its first result, upstream's and this CLI interleaved; then the start and idle memory of -c"
  lean=$tmp/monty-lean
  MONTY_LEAN=1 MONTY_AOT_NOEMBED=1 scripts/aotgo.sh build -o "$lean" ./cmd/monty
  echo "lean_binary $(stat -c %s "$lean")" | tee -a "$out/sizes.txt"
  "$MONTY_TEST_PYTHON" scripts/bench/worker.py --rounds 15 upstream="$upstream" aot="$bin" lean="$lean" | tee "$out/worker.txt"
  for b in "$bin" "$lean"; do
    MONTY_SIGNING_KEY=$(head -c 32 /dev/urandom | base64) \
      "$MONTY_TEST_PYTHON" scripts/bench/start.py "$bin" "$tmp/warm" --aot "$b" --upstream "$upstream" --cold-runs 1 | tee -a "$out/worker.txt"
  done
fi
say "figures in $out"
