#!/usr/bin/env bash
# Runs a go command (build, test, run) with the interpreter and the type
# checker translated to Go ahead of time linked in
# (docs/building.md#the-ahead-of-time-engine):
#
#   scripts/aotgo.sh build -o monty-aot ./cmd/monty
#   scripts/aotgo.sh test ./runtime/...
#
# It adds, through go's -overlay, the files of wasm/aot/testdata/overlay
# that import github.com/monty-go/monty/wasm/aot (the interpreter) to the
# packages that link it (cmd/monty, examples/serverless, scripts/bench/benchcmp,
# scripts/conformance, and the tests of runtime, session and
# session/protocol) and github.com/monty-go/monty/wasm/aot/checker (the
# type checker) to those that link that (cmd/monty, scripts/typecheckconf,
# the tests of runtime/typecheck and cmd/monty), and resolves that module through
# wasm/aot/go.work. MONTY_AOT_CHECKER=0 leaves the type checker's
# translation out of cmd/monty. No file of the main module imports it: `go build
# ./...`, `go vet ./...` and `go mod tidy` of the main module, and of every
# module that requires it, never see it. The translated packages (each
# translation split into some 50 packages of about 2 MB of source by
# scripts/aot.sh, which compile side by side in under 1 GB) are compiled
# with the same flags every time (no DWARF, one compiler worker per
# package; -trimpath and CGO_ENABLED=0, as releases build them), so that
# Go's build cache keeps them across tests and releases; run
# `make aot` (scripts/aot.sh) first to generate them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: scripts/aotgo.sh build|test|run [go flags] packages" >&2; exit 2; }
cmd=$1
shift
from=$repo/wasm/aot/testdata/overlay
overlay=$(mktemp)
cmd_monty=$from/cmd_monty_aot.go
trap 'rm -f "$overlay" "$overlay.go"' EXIT
if [ "${MONTY_AOT_CHECKER:-1}" = 0 ]; then
  # The CLI with the interpreter's translation only (the type checker on
  # wazero): what scripts/release.sh builds for Windows.
  grep -v 'wasm/aot/checker' "$cmd_monty" >"$overlay.go"
  cmd_monty=$overlay.go
fi
cat >"$overlay" <<JSON
{"Replace": {
  "$repo/cmd/monty/aot.go": "$cmd_monty",
  "$repo/examples/serverless/aot.go": "$from/serverless_aot.go",
  "$repo/scripts/bench/benchcmp/aot.go": "$from/benchcmp_aot.go",
  "$repo/scripts/conformance/aot.go": "$from/conformance_aot.go",
  "$repo/scripts/typecheckconf/aot.go": "$from/typecheckconf_aot.go",
  "$repo/runtime/typecheck/aot_test.go": "$from/typecheck_aot_test.go",
  "$repo/cmd/monty/aot_test.go": "$from/cmd_monty_aot_test.go",
  "$repo/runtime/aot_test.go": "$from/runtime_aot_test.go",
  "$repo/session/aot_test.go": "$from/session_aot_test.go",
  "$repo/session/protocol/aot_test.go": "$from/protocol_aot_test.go"
}}
JSON
# MONTY_AOT_NOEMBED=1 (make monty-aot, scripts/release.sh): the program
# runs its modules on the translations only, so it does not embed
# monty.wasm (-tags monty_noembed) nor, unless MONTY_AOT_CHECKER=0,
# checker.wasm (monty_checker_noembed): 27.6 MB less, and an engine asked
# for wazero fails with runtime.ErrModuleNotEmbedded
# (docs/building.md#carrying-only-what-runs).
# MONTY_LEAN=1 adds the monty_lean tag: the CLI without monty serve,
# monty mcp, --connect, OTLP export and the Redis and S3 stores, which the
# wheel carries (docs/building.md#the-lean-build).
t=
if [ "${MONTY_AOT_NOEMBED:-0}" = 1 ]; then
  t=monty_noembed
  [ "${MONTY_AOT_CHECKER:-1}" = 0 ] || t=$t,monty_checker_noembed
fi
[ "${MONTY_LEAN:-0}" != 1 ] || t=${t:+$t,}monty_lean
tags=()
[ -z "$t" ] || tags=(-tags="$t")
# CGO_ENABLED=0 unless the caller says otherwise or asks for -race (which
# needs cgo): releases are static, and with cgo every package, the
# translations included, would be another entry in Go's build cache.
cgo=0
for arg in "$@"; do [ "$arg" != -race ] || cgo=1; done
CGO_ENABLED=${CGO_ENABLED:-$cgo} GOWORK=$repo/wasm/aot/go.work go "$cmd" -overlay="$overlay" -trimpath "${tags[@]}" \
  -gcflags='github.com/monty-go/monty/wasm/aot/internal/translated/...=-dwarf=false -c=1' \
  -gcflags='github.com/monty-go/monty/wasm/aot/internal/checker/...=-dwarf=false -c=1' -ldflags='-s -w' "$@"
