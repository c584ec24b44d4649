#!/usr/bin/env bash
# Builds one of the two modules reproducibly; scripts/build-wasm.sh (the
# interpreter) and scripts/build-checker.sh (the type checker) prepare
# their crate's carried patches and then call this.
#
#   scripts/cargo-wasm.sh CRATE_DIR ARTIFACT OUT [EXTRA_RUSTFLAGS]
#
# builds the crate in CRATE_DIR for wasm32-wasip1 with its release profile
# and copies the library it makes (ARTIFACT, e.g. monty_wasm.wasm) to OUT.
# EXTRA_RUSTFLAGS is appended to the rustflags (experiments only). The
# target directory is $CARGO_TARGET_DIR, or CRATE_DIR/target.
#
# Needs the pinned toolchain (scripts/install-toolchain.sh). The same sources
# and toolchain give the same bytes: the standard library is built with the
# module (-Zbuild-std), paths are remapped, the release profiles use fat LTO
# with one codegen unit, and nothing depends on the time or the machine.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
crate=$1 artifact=$2 out=$3 extra=${4:-}
# shellcheck source=toolchain.env
. "$repo/scripts/toolchain.env"

# Debian's toolchain first: rustup's own cargo/rustc lack the wasm target.
export PATH=/usr/bin:$PATH
export RUSTC=/usr/bin/rustc
have=$(rustc --version)
if [ "$have" != "$RUSTC_VERSION" ]; then
  echo "cargo-wasm: need $RUSTC_VERSION, found $have (run scripts/install-toolchain.sh)" >&2
  exit 1
fi

target_dir=${CARGO_TARGET_DIR:-$crate/target}
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
 --remap-path-prefix=/usr/lib/rustlib/src/rust=/rustc${extra:+ $extra}"

echo "cargo-wasm: cargo build of $crate (release, fat LTO; takes several minutes)" >&2
cargo build --locked --release --target wasm32-wasip1 -Zbuild-std=std,panic_abort \
  --manifest-path "$crate/Cargo.toml" --target-dir "$target_dir"

cp "$target_dir/wasm32-wasip1/release/$artifact" "$out"
echo "cargo-wasm: wrote $out ($(stat -c %s "$out") bytes)" >&2
