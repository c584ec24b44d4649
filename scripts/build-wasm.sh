#!/usr/bin/env bash
# Builds the interpreter module reproducibly.
#
#   scripts/build-wasm.sh [OUT]    (default OUT: wasm/monty.wasm)
#
# For experiments (scripts/module-ab.sh) only: MONTY_EXTRA_RUSTFLAGS is
# appended to the rustflags, and cargo's CARGO_PROFILE_RELEASE_* variables
# override wasm/Cargo.toml's release profile; with neither set the output is
# the committed module.
#
# Needs the pinned toolchain (scripts/install-toolchain.sh). The same sources
# and toolchain give the same bytes: paths are remapped, LTO uses one codegen
# unit and nothing depends on the time or the machine.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/wasm/monty.wasm}
# shellcheck source=toolchain.env
. "$repo/scripts/toolchain.env"

# Debian's toolchain first: rustup's own cargo/rustc lack the wasm target.
export PATH=/usr/bin:$PATH
export RUSTC=/usr/bin/rustc
have=$(rustc --version)
if [ "$have" != "$RUSTC_VERSION" ]; then
  echo "build-wasm: need $RUSTC_VERSION, found $have (run scripts/install-toolchain.sh)" >&2
  exit 1
fi

target_dir=${CARGO_TARGET_DIR:-$repo/wasm/target}
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src
export RUSTC_BOOTSTRAP=1 # for -Zbuild-std: the wasm32-wasip1 std is built from rust-web-src
export SOURCE_DATE_EPOCH=0
export CARGO_INCREMENTAL=0
export RUSTFLAGS="-L /usr/lib/wasm32-wasi \
 -C link-arg=-zstack-size=$WASM_STACK_SIZE \
 -C link-arg=/usr/lib/wasm32-wasi/crt1-reactor.o -C link-arg=--export=_initialize \
 --remap-path-prefix=$registry=/cargo/registry \
 --remap-path-prefix=$repo=/monty-go \
 --remap-path-prefix=$target_dir=/target \
 --remap-path-prefix=/usr/lib/rustlib/src/rust=/rustc${MONTY_EXTRA_RUSTFLAGS:+ $MONTY_EXTRA_RUSTFLAGS}"

# monty with the carried patches (wasm/patches/), which wasm/Cargo.toml uses.
"$repo/scripts/patch-monty.sh"

echo "build-wasm: cargo build (release, fat LTO; takes several minutes)" >&2
cargo build --locked --release --target wasm32-wasip1 \
  -Zbuild-std=std,panic_abort \
  --manifest-path "$repo/wasm/Cargo.toml" --target-dir "$target_dir"

cp "$target_dir/wasm32-wasip1/release/monty_wasm.wasm" "$out"
echo "build-wasm: wrote $out ($(stat -c %s "$out") bytes)" >&2
