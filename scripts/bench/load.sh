#!/usr/bin/env bash
# Measures POST /exec of `monty serve` on loopback: throughput and latency
# percentiles for a tiny program, without a session and continuing one.
#
#   scripts/bench/load.sh                      # mem: store, 4 clients, 10 s per scenario
#   STORE=redis://127.0.0.1:6379/0 CLIENTS=8 DURATION=20s scripts/bench/load.sh
#
# Builds cmd/monty, starts `monty serve` on a free loopback port with the
# default concurrency (2 per CPU) and a log record per request (to a file),
# runs scripts/bench/load against it, stops it.
set -euo pipefail
tool=bench-load
. "$(dirname "$0")/../lib.sh"
cd "$repo"
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/monty" ./cmd/monty
go build -o "$tmp/load" ./scripts/bench/load
MONTY_SIGNING_KEY=load-test-signing-key-0123456789 "$tmp/monty" serve \
  --addr 127.0.0.1:0 --store "${STORE:-mem:}" --log-format json 2>"$tmp/serve.log" &
pid=$!
port=$(listening_port "$pid") || {
  cat "$tmp/serve.log" >&2
  die "monty serve did not listen"
}
url=http://127.0.0.1:$port
say "monty serve at $url, store ${STORE:-mem:}, $(nproc) CPUs, ${CLIENTS:-4} clients, ${DURATION:-10s} per scenario"
"$tmp/load" -url "$url" -c "${CLIENTS:-4}" -d "${DURATION:-10s}"
