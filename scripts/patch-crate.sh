#!/usr/bin/env bash
# Prepares DEST/NAME-VERSION: the crate NAME at VERSION from crates.io with
# the patches PATCHDIR/NAME-VERSION-*.patch applied, for a manifest that
# points [patch.crates-io] at it. The directory is rebuilt from scratch
# every time, so no edit made there by hand survives into a build.
#
#   scripts/patch-crate.sh NAME VERSION PATCHDIR DEST
#
# scripts/build-wasm.sh uses it for the interpreter's carried patches
# (wasm/patches/), scripts/build-checker.sh for the type checker's
# (wasm/checker/patches/), and `make fmt` and `make lint` before cargo.
set -euo pipefail
name=$1 version=$2 patches=$3 dest_root=$4
dest=$dest_root/$name-$version
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src
find_src() { ls -d "$registry"/*/"$name-$version" 2>/dev/null | head -n1 || true; }
src=$(find_src)
if [ -z "$src" ]; then
  # Fetch the pristine crate through a throwaway manifest: the patched
  # manifest cannot resolve until the patched directory exists.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/src" && : > "$tmp/src/lib.rs"
  printf '[package]\nname = "fetch-crate"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = "=%s"\n' "$name" "$version" > "$tmp/Cargo.toml"
  PATH=/usr/bin:$PATH cargo fetch --manifest-path "$tmp/Cargo.toml" >&2
  src=$(find_src)
fi
if [ -z "$src" ]; then
  echo "patch-crate: $name-$version is not in $registry" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
cp -R "$src"/. "$dest"/
n=0
for p in "$patches"/"$name-$version"-*.patch; do
  patch --quiet --forward -p1 -d "$dest" < "$p"
  n=$((n + 1))
done
echo "patch-crate: $dest ready ($n patches)" >&2
