#!/usr/bin/env bash
# Builds the interpreter module reproducibly (scripts/cargo-wasm.sh: the
# same sources and toolchain give the same bytes).
#
#   scripts/build-wasm.sh [OUT]    (default OUT: wasm/monty.wasm)
#
# For experiments (scripts/bench/module-ab.sh) only: MONTY_EXTRA_RUSTFLAGS is
# appended to the rustflags, and cargo's CARGO_PROFILE_RELEASE_* variables
# override wasm/Cargo.toml's release profile; with neither set the output is
# the committed module.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/wasm/monty.wasm}

# monty and monty-types with the carried patches (wasm/patches/), which
# wasm/Cargo.toml uses: the version monty's pin names (monty-types is
# released with it).
version=$(sed -n 's/^monty = "=\([^"]*\)".*/\1/p' "$repo/wasm/Cargo.toml")
for crate in monty monty-types; do
  "$repo/scripts/patch-crate.sh" "$crate" "$version" "$repo/wasm/patches" "$repo/wasm/.patched"
done

"$repo/scripts/cargo-wasm.sh" "$repo/wasm" monty_wasm.wasm "$out" "${MONTY_EXTRA_RUSTFLAGS:-}"
