#!/usr/bin/env bash
# Lists, one per line and sorted, the files wasm/monty.wasm is built from.
# wasm/stamp_test.go computes the same list.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo wasm/Cargo.toml
  echo wasm/Cargo.lock
  echo scripts/build-wasm.sh
  echo scripts/toolchain.env
  echo scripts/patch-monty.sh
  find wasm/patches -name '*.patch'
  find wasm/src -name '*.rs'
} | LC_ALL=C sort
