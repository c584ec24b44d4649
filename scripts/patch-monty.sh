#!/usr/bin/env bash
# Prepares wasm/.patched/monty-<version>: the monty crate from crates.io
# (the exact version Cargo.lock pins) with the patches in wasm/patches/
# applied. wasm/Cargo.toml points crates-io's monty at that directory, so
# run this before any cargo command in wasm/ (scripts/build-wasm.sh and
# `make lint` do). The directory is rebuilt from scratch every time, so no
# edit made there by hand survives into a build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
version=1.4.0
dest=$repo/wasm/.patched/monty-$version
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src
src=$(ls -d "$registry"/*/monty-$version 2>/dev/null | head -n1 || true)
if [ -z "$src" ]; then
  # Fetch the pristine crate through a throwaway manifest: wasm/Cargo.toml
  # itself cannot resolve until the patched directory exists.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/src" && : > "$tmp/src/lib.rs"
  printf '[package]\nname = "fetch-monty"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nmonty = "=%s"\n' "$version" > "$tmp/Cargo.toml"
  PATH=/usr/bin:$PATH cargo fetch --manifest-path "$tmp/Cargo.toml" >&2
  src=$(ls -d "$registry"/*/monty-$version 2>/dev/null | head -n1 || true)
fi
if [ -z "$src" ]; then
  echo "patch-monty: monty-$version is not in $registry; run: cargo fetch --manifest-path wasm/Cargo.toml" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
cp -R "$src"/. "$dest"/
for p in "$repo"/wasm/patches/monty-$version-*.patch; do
  patch --quiet --forward -p1 -d "$dest" < "$p"
done
echo "patch-monty: $dest ready ($(ls "$repo"/wasm/patches/monty-$version-*.patch | wc -l) patches)" >&2
