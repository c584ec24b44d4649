#!/usr/bin/env bash
# Runs the type-checking tests the monty-type-checking 1.4.0 crate ships,
# natively (`cargo test --test main` in a copy of the crate, with the
# crate's own Cargo.lock) and through Go (scripts/typecheckconf, on the
# committed wasm/checker/checker.wasm), and prints them side by side
# (see docs/conformance.md).
#
#   scripts/typecheck-conformance.sh            native and Go
#   scripts/typecheck-conformance.sh --go-only  Go only (no Rust needed)
#   MONTY_TYPECHECK_AOT=1 scripts/typecheck-conformance.sh --go-only
#                                               the Go side on the checker
#                                               translated to Go (make aot;
#                                               its first build takes a
#                                               few minutes)
#
# The native build takes several minutes the first time (its target
# directory is kept in ~/.cache/monty-go/typecheck-native).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"
export PATH=/usr/bin:$PATH

# The crate's sources: fetched through the checker's manifest.
cargo fetch --manifest-path wasm/checker/Cargo.toml >&2
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src
crate=$(ls -d "$registry"/*/monty-type-checking-$(monty_version) 2>/dev/null | head -n1 || true)
if [ -z "$crate" ]; then
  die "monty-type-checking-$(monty_version) is not in $registry"
fi

native_args=()
if [ "${1:-}" != --go-only ]; then
  work=${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/typecheck-native
  mkdir -p "$work"
  rm -rf "$work/crate"
  cp -R "$crate" "$work/crate"
  out=$work/native.txt
  say "native run (cargo test --test main; first build takes several minutes)"
  # The crate's tests fail or pass; either way the results are in $out.
  (cd "$work/crate" && cargo test --locked --test main --target-dir "$work/target" 2>&1 || true) | tee "$out" | grep -E '^test |test result' >&2
  native_args=(-native "$out")
fi

if [ "${MONTY_TYPECHECK_AOT:-}" = 1 ]; then
  say "Go run on the ahead-of-time engine"
  make -s aot
  scripts/aotgo.sh run ./scripts/typecheckconf -crate "$crate" "${native_args[@]}"
  exit
fi
say "Go run"
go run ./scripts/typecheckconf -crate "$crate" "${native_args[@]}"
