#!/usr/bin/env bash
# Writes the checksum and stamp of a module: wasm/monty.wasm, or with
# --checker wasm/checker/checker.wasm. The stamp lists the checksums of every
# input the module was built from (scripts/stamp-inputs.sh); the Go tests in
# ./wasm and ./wasm/checker recompute both and fail when a committed module
# is stale.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
dir=wasm name=monty.wasm
if [ "${1:-}" = --checker ]; then
  dir=wasm/checker name=checker.wasm
fi
{
  echo "# Inputs of $dir/$name; regenerate with: make wasm"
  for f in $(scripts/stamp-inputs.sh "$@"); do
    printf '%s  %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$f"
  done
} > "$dir/$name.stamp"
(cd "$dir" && sha256sum "$name" > "$name.sha256")
echo "stamp: wrote $dir/$name.stamp and $dir/$name.sha256" >&2
