#!/usr/bin/env bash
# Lists, one per line and sorted, the files a module is built from:
# wasm/monty.wasm, or with --checker wasm/checker/checker.wasm. Both are
# built from the crate they share (wasm/abi/) and scripts/cargo-wasm.sh.
# wasm/stamp_test.go and wasm/checker/stamp_test.go check the stamps.
set -euo pipefail
cd "$(dirname "$0")/.."
shared() {
  echo wasm/abi/Cargo.toml
  find wasm/abi/src -name '*.rs'
  echo scripts/cargo-wasm.sh
  echo scripts/toolchain.env
}
if [ "${1:-}" = --checker ]; then
  {
    shared
    echo wasm/checker/Cargo.toml
    echo wasm/checker/Cargo.lock
    echo scripts/build-checker.sh
    echo scripts/patch-crate.sh
    find wasm/checker/src -name '*.rs'
    find wasm/checker/patches -name '*.patch'
  } | LC_ALL=C sort
  exit 0
fi
{
  shared
  echo wasm/Cargo.toml
  echo wasm/Cargo.lock
  echo scripts/build-wasm.sh
  echo scripts/patch-crate.sh
  find wasm/patches -name '*.patch'
  find wasm/src -name '*.rs'
} | LC_ALL=C sort
