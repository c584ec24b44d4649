#!/usr/bin/env bash
# Builds the type checker module (wasm/checker: monty-type-checking behind
# a C-ABI shim) reproducibly, like scripts/build-wasm.sh builds the
# interpreter (scripts/cargo-wasm.sh: the same sources and toolchain give
# the same bytes).
#
#   scripts/build-checker.sh [OUT]    (default OUT: wasm/checker/checker.wasm)
#
# The checker's Cargo.lock pins the versions monty-type-checking was
# released with (salsa 0.28.2: a later salsa breaks ruff_python_ast 0.0.14).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
crate=$repo/wasm/checker
out=${1:-$crate/checker.wasm}

# monty-typeshed and monty-type-checking with the carried patches
# (wasm/checker/patches/: typeshed's build script zipped it with the
# build's time of day and in directory order; the checker clamped spans in
# the prelude onto the snippet), which wasm/checker/Cargo.toml uses through
# [patch.crates-io], at the version its pin of monty-type-checking names.
version=$(sed -n 's/^monty-type-checking = "=\([^"]*\)".*/\1/p' "$crate/Cargo.toml")
"$repo/scripts/patch-crate.sh" monty-typeshed "$version" "$crate/patches" "$crate/.patched"
"$repo/scripts/patch-crate.sh" monty-type-checking "$version" "$crate/patches" "$crate/.patched"

"$repo/scripts/cargo-wasm.sh" "$crate" monty_checker_wasm.wasm "$out"
