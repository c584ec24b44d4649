#!/usr/bin/env bash
# Builds the type checker module (wasm/checker: monty-type-checking behind
# a C-ABI shim) reproducibly, like scripts/build-wasm.sh builds the
# interpreter: same pinned toolchain, -Zbuild-std, fat LTO, remapped paths.
#
#   scripts/build-checker.sh [OUT]    (default OUT: wasm/checker/checker.wasm)
#
# The checker's Cargo.lock pins the versions monty-type-checking was
# released with (salsa 0.28.2: a later salsa breaks ruff_python_ast 0.0.14).
# Like the interpreter, the same sources and toolchain give the same bytes.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
crate=$repo/wasm/checker
out=${1:-$crate/checker.wasm}
# shellcheck source=toolchain.env
. "$repo/scripts/toolchain.env"

export PATH=/usr/bin:$PATH
export RUSTC=/usr/bin/rustc
have=$(rustc --version)
if [ "$have" != "$RUSTC_VERSION" ]; then
  echo "build-checker: need $RUSTC_VERSION, found $have (run scripts/install-toolchain.sh)" >&2
  exit 1
fi

target_dir=${CARGO_TARGET_DIR:-$crate/target}
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src
export RUSTC_BOOTSTRAP=1 SOURCE_DATE_EPOCH=0 CARGO_INCREMENTAL=0
export RUSTFLAGS="-L /usr/lib/wasm32-wasi \
 -C link-arg=-zstack-size=$WASM_STACK_SIZE \
 -C link-arg=/usr/lib/wasm32-wasi/crt1-reactor.o -C link-arg=--export=_initialize \
 --remap-path-prefix=$registry=/cargo/registry \
 --remap-path-prefix=$repo=/monty-go \
 --remap-path-prefix=$target_dir=/target \
 --remap-path-prefix=/usr/lib/rustlib/src/rust=/rustc"

# monty-typeshed with the carried patch (wasm/checker/patches/: its build
# script zips typeshed with the build's time of day and in directory
# order), which wasm/checker/Cargo.toml uses through [patch.crates-io].
"$repo/scripts/patch-crate.sh" monty-typeshed 1.4.0 "$crate/patches" "$crate/.patched"

echo "build-checker: cargo build (release, fat LTO; ty is large: this takes a long while)" >&2
cargo build --locked --release --target wasm32-wasip1 -Zbuild-std=std,panic_abort \
  --manifest-path "$crate/Cargo.toml" --target-dir "$target_dir"
cp "$target_dir/wasm32-wasip1/release/monty_checker_wasm.wasm" "$out"
echo "build-checker: wrote $out ($(stat -c %s "$out") bytes)" >&2
