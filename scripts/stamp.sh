#!/usr/bin/env bash
# Writes wasm/monty.wasm.sha256 and wasm/monty.wasm.stamp: the module's
# checksum and the checksums of every input it was built from. The Go tests
# in ./wasm recompute both and fail when the committed module is stale.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
{
  echo "# Inputs of wasm/monty.wasm; regenerate with: make wasm"
  for f in $(scripts/stamp-inputs.sh); do
    printf '%s  %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$f"
  done
} > wasm/monty.wasm.stamp
(cd wasm && sha256sum monty.wasm > monty.wasm.sha256)
echo "stamp: wrote wasm/monty.wasm.stamp and wasm/monty.wasm.sha256" >&2
