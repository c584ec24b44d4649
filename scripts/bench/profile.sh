#!/usr/bin/env bash
# Profiles one kernel of testdata/bench on the ahead-of-time engine, with
# the interpreter's Rust functions named in the profile instead of fnNNN.
#
#   scripts/bench/profile.sh ROW [PPROF ARGS...]
#
# ROW is a kernel's file in testdata/bench less .py (regex_extract,
# parse_strings, ...); PPROF ARGS default to -top -nodecount=40. Prints
# pprof's report, the module's functions as wasm:<Rust path> (demangled
# by c++filt when there is one), and where the profile and the binary
# that reads it are (pprof -http shows the mangled names).
#
# How: the interpreter module is built once more with its name section
# (scripts/build-wasm.sh with MONTY_EXTRA_RUSTFLAGS="-C strip=debuginfo",
# which overrides the release profile's strip = true), for profiling only:
# the script checks that it is the shipped wasm/monty.wasm byte for byte
# once wasm-strip drops its custom sections, so the code profiled is the
# code shipped. (Setting cargo's CARGO_PROFILE_RELEASE_STRIP instead would
# change the crates' metadata hash, hence their symbols' names and the
# order the linker lays the functions out in: the same code, other bytes.) A copy of this working tree takes it in
# place of wasm/monty.wasm, `scripts/aot.sh --stamp` translates it there
# (wasm2go names each function after the name section), and benchcmp,
# built there by scripts/aotgo.sh, measures ROW in its aot column under
# -cpuprofile. wasm/ and the repository are left as they are.
#
# The first run needs the Rust toolchain (make toolchain) and wabt's
# wasm-strip and wat2wasm, builds the module (6-20 minutes on two cores,
# about 3 GB) and compiles its translation (a few minutes); both are kept
# in PROFILE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/profile),
# keyed by wasm/monty.wasm.stamp, so later runs take the time of the row.
# BENCHTIME (default 10s) is how long the row is measured.
set -euo pipefail
tool=bench-profile
. "$(dirname "$0")/../lib.sh"
cd "$repo"
[ $# -ge 1 ] || die "usage: scripts/bench/profile.sh ROW [PPROF ARGS...]"
row=$1
shift
[ -f "testdata/bench/$row.py" ] || die "no kernel $row: one of $(cd testdata/bench && ls -- *.py | sed 's/\.py$//' | tr '\n' ' ')"
[ $# -gt 0 ] || set -- -top -nodecount=40
for cmd in wasm-strip wat2wasm; do
  command -v "$cmd" >/dev/null || die "$cmd is needed (Debian's wabt: make toolchain)"
done
dir=${PROFILE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/profile}
key=$(sha256sum wasm/monty.wasm.stamp | cut -c1-16)
named=$dir/$key/monty-named.wasm
mkdir -p "$dir/$key"

if [ ! -f "$named" ]; then
  say "building the interpreter module with its name section (6-20 minutes, once per module)"
  MONTY_EXTRA_RUSTFLAGS="-C strip=debuginfo" CARGO_TARGET_DIR=$dir/target scripts/build-wasm.sh "$named.tmp" >&2
  wasm-strip "$named.tmp" -o "$named.stripped"
  if ! cmp -s "$named.stripped" wasm/monty.wasm; then
    rm -f "$named.tmp" "$named.stripped"
    die "the module built with names is not wasm/monty.wasm once stripped: is wasm/monty.wasm built from this tree (make wasm-check)?"
  fi
  rm -f "$named.stripped"
  mv "$named.tmp" "$named"
fi

tree=$dir/$key/tree
say "copying the working tree to $tree"
mkdir -p "$tree"
git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$tree"
cp "$named" "$tree/wasm/monty.wasm"
sum=$(sha256sum "$named" | cut -d' ' -f1)
echo "$sum  monty.wasm" >"$tree/wasm/monty.wasm.sha256"
# The translations are not tracked files: the copy keeps them between runs.
if [ "$(cat "$dir/$key/translated" 2>/dev/null)" != "$sum" ] || [ ! -f "$tree/wasm/aot/internal/translated/module.go" ]; then
  say "translating the named module (a few minutes, once per module)"
  (cd "$tree" && scripts/aot.sh --stamp) >&2
  echo "$sum" >"$dir/$key/translated"
fi
say "building benchcmp on the ahead-of-time engine (its first build compiles the translation)"
(cd "$tree" && scripts/aotgo.sh build -o "$dir/$key/benchcmp" ./scripts/bench/benchcmp) >&2
out=$dir/$key/$row.pprof
say "measuring $row for ${BENCHTIME:-10s}"
(cd "$tree" && "$dir/$key/benchcmp" -only "$row" -columns aot -benchtime "${BENCHTIME:-10s}" -rounds 1 -cpuprofile "$out") >&2
# wasm2go names a function _ + its Rust symbol (v0-mangled): c++filt
# (binutils) demangles them, without the crates' hashes.
if command -v c++filt >/dev/null; then
  go tool pprof "$@" "$dir/$key/benchcmp" "$out" |
    sed -E 's#github\.com/monty-go/monty/wasm/aot/internal/translated\.(\(\*Module\)\._)?#wasm:#g' |
    c++filt | sed -E 's/\[[0-9a-f]{16}\]//g'
else
  go tool pprof "$@" "$dir/$key/benchcmp" "$out"
fi
say "profile: $out (binary $dir/$key/benchcmp): go tool pprof -http=: $dir/$key/benchcmp $out"
