#!/usr/bin/env bash
# What a turn costs (turns.py): monty.v1 feeds through pydantic-monty 1.4.0
# and POST /exec, writes (`n += 1`) and reads (`n`), on each store, for two
# builds of `monty serve` interleaved: BASE (a revision) and this working
# tree. Issue 53's figures in docs/reliability.md are BASE=2e7656e, the
# release before turns were stored.
#
#   scripts/bench/turns.sh [BASE] [ROUNDS] [CALLS]    (HEAD, 6, 200)
#   STORES="mem dir redis" (default; redis starts scripts/services.sh, and
#   stops it again unless it was running)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$repo"
base=${1:-HEAD}
rounds=${2:-6}
calls=${3:-200}
stores=${STORES:-mem dir redis}
eval "$(scripts/pyclients.sh env)"
tmp=$(mktemp -d)
pids=()
started_services=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -z "$started_services" ] || scripts/services.sh stop >&2
  git worktree remove --force "$tmp/base" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
say "building $base and the working tree"
git worktree add --detach -q "$tmp/base" "$base"
(cd "$tmp/base" && go build -o "$tmp/monty-base" ./cmd/monty)
go build -o "$tmp/monty-now" ./cmd/monty
"$tmp/monty-now" precompile >/dev/null
key=bench-turns-key
servers=()
for st in $stores; do
  for side in base now; do
    case $st in
      mem) url=mem: ;;
      dir) url=$tmp/store-$side ;;
      redis)
        if [ -z "$started_services" ] && ! scripts/services.sh status >/dev/null 2>&1; then
          started_services=1 # and stopped at the end
        fi
        scripts/services.sh start >&2
        eval "$(scripts/services.sh env)"
        # Each side its own database: their sessions never meet.
        url=${MONTY_TEST_REDIS_URL%/*}/$([ $side = base ] && echo 1 || echo 2)
        ;;
      *) die "no store $st; one of: mem dir redis" ;;
    esac
    MONTY_SIGNING_KEY=bench-turns-signing-key "$tmp/monty-$side" serve --addr 127.0.0.1:0 --store "$url" \
      --api-key "$key" --log-format json --log-level warn 2>"$tmp/serve-$st-$side.log" &
    pids+=($!)
    port=$(listening_port $!) || {
      cat "$tmp/serve-$st-$side.log" >&2
      die "monty serve ($side, $st) did not start"
    }
    servers+=("$side $st=ws://127.0.0.1:$port/,http://127.0.0.1:$port")
  done
done
say "base is $(git -C "$tmp/base" rev-parse --short HEAD); $rounds rounds of $calls calls"
for st in $stores; do
  pair=()
  for s in "${servers[@]}"; do [[ $s == *" $st="* ]] && pair+=("$s"); done
  echo "store: $st"
  "$MONTY_TEST_PYTHON" scripts/bench/turns.py "$key" "$rounds" "$calls" "${pair[@]}"
done
