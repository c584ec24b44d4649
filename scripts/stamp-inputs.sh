#!/usr/bin/env bash
# Lists, one per line and sorted, the files a module is built from:
# wasm/monty.wasm, or with --checker wasm/checker/checker.wasm.
# wasm/stamp_test.go and wasm/checker/stamp_test.go check the stamps.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --checker ]; then
  {
    echo wasm/checker/Cargo.toml
    echo wasm/checker/Cargo.lock
    echo wasm/src/cbor.rs # shared with the interpreter shim
    echo scripts/build-checker.sh
    echo scripts/patch-crate.sh
    echo scripts/toolchain.env
    find wasm/checker/src -name '*.rs'
    find wasm/checker/patches -name '*.patch'
  } | LC_ALL=C sort
  exit 0
fi
{
  echo wasm/Cargo.toml
  echo wasm/Cargo.lock
  echo scripts/build-wasm.sh
  echo scripts/toolchain.env
  echo scripts/patch-monty.sh
  find wasm/patches -name '*.patch'
  find wasm/src -name '*.rs'
} | LC_ALL=C sort
