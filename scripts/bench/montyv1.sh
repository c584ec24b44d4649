#!/usr/bin/env bash
# Benchmarks monty.v1 through pydantic-monty 1.4.0 (scripts/bench/montyv1.py):
# round trips and external calls on upstream's worker, our `monty
# subprocess` and `monty serve` over WebSocket, memory per session and
# sessions per second, interleaved and reported as ratios against upstream's
# worker. Needs Python 3.10+ and PyPI (scripts/pyclients.sh).
#
#   scripts/bench/montyv1.sh [ROUNDS]
set -euo pipefail
tool=bench-montyv1
. "$(dirname "$0")/../lib.sh"
cd "$repo"
eval "$(scripts/pyclients.sh env)"
tmp=$(mktemp -d)
trap 'kill "${serve_pid:-0}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/monty" ./cmd/monty
"$tmp/monty" precompile >/dev/null
upstream=$(dirname "$MONTY_TEST_PYTHON")/monty
MONTY_SIGNING_KEY=benchmark-signing-key-0123 "$tmp/monty" serve --addr 127.0.0.1:0 --store "$tmp/store" \
  --log-format json --log-level warn 2>"$tmp/serve.log" &
serve_pid=$!
port=$(listening_port "$serve_pid") || {
  cat "$tmp/serve.log" >&2
  die "monty serve did not start"
}
"$MONTY_TEST_PYTHON" scripts/bench/montyv1.py "$upstream" "$tmp/monty" "ws://127.0.0.1:$port/" "$serve_pid" "${1:-9}"
