#!/usr/bin/env bash
# Runs monty's own test cases (test_cases/*.py of the monty 1.4.0 crate)
# natively (scripts/native) and through the Go runtime, and prints a
# side-by-side table (see docs/conformance.md).
#
#   scripts/conformance.sh [flags for scripts/conformance, e.g. -quiet, -run NAME]
#   MONTY_CONFORMANCE_AOT=1 scripts/conformance.sh   # the Go side on the AOT engine
#
# Needs Go and Rust 1.96 (Debian's, in /usr/bin, is preferred: see
# scripts/native/build.sh). Exits non-zero when a case that passes natively
# does not pass through Go and is not in
# testdata/conformance/known-differences.txt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"

command -v go >/dev/null || die "go not found"

# The test cases ship inside the monty crate: fetch it, then ask cargo where
# it was unpacked.
scripts/native/build.sh fetch
if [ -x /usr/bin/cargo ]; then cargo=/usr/bin/cargo; else cargo=cargo; fi
manifest=$(cd scripts/native && "$cargo" metadata --format-version 1 --locked --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" |
  grep -o "\"manifest_path\":\"[^\"]*/monty-$(monty_version)/Cargo\.toml\"" | head -1 | sed 's/^"manifest_path":"//; s/"$//')
if [ -z "$manifest" ]; then
  die "cannot locate the monty $(monty_version) crate (cargo metadata in scripts/native)"
fi
cases=$(dirname "$manifest")/test_cases
if [ ! -d "$cases" ]; then
  die "$cases does not exist"
fi

native_bin=$(scripts/native/build.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "native run of $cases"
"$native_bin" conformance "$cases" >"$tmp/native.jsonl"

if [ "${MONTY_CONFORMANCE_AOT:-}" = 1 ]; then
  # The Go side on the module translated to Go (wasm/aot; make aot first
  # generates it; docs/building.md#the-ahead-of-time-engine).
  say "Go run on the ahead-of-time engine"
  make -s aot
  scripts/aotgo.sh run ./scripts/conformance -cases "$cases" -native "$tmp/native.jsonl" "$@"
  exit
fi
say "Go run"
go run ./scripts/conformance -cases "$cases" -native "$tmp/native.jsonl" "$@"
