#!/usr/bin/env bash
# The fault suite (docs/reliability.md): two `monty serve` instances sharing
# a store, clients appending through both with Idempotency-Key retries (and
# through monty.v1 sessions over WebSocket, loading them on the other
# instance when a connection breaks),
# faults injected one after another (toxiproxy on the Redis and S3 links,
# SIGKILL of an instance, a Redis restart that loses its data, the S3
# server stopped, a full disk under the directory store), then a checker
# over the histories (scripts/faults, a module of its own).
#
#   scripts/faults.sh          # short profile: a few minutes; what CI runs
#   scripts/faults.sh long     # release runs: longer phases, the figures
#
# Everything runs on throwaway loopback ports and directories of its own
# (not the servers of scripts/services.sh) and is stopped on exit, failure
# included. Binaries come from the cache scripts/services.sh uses:
# redis-server from Debian's package, versitygw and toxiproxy-server built
# once from the Go module proxy at pinned versions.
# Settings:
#   MONTY_SERVICES_BIN   the binary cache (as in scripts/services.sh)
#   FAULTS_FIGURES       also write the figures (Markdown) to this file
#   FAULTS_ONLY          run only these scenarios (comma-separated)
#   FAULTS_KEEP          keep the logs and data directory (its path is printed)
#   FAULTS_NO_KEY        retry without Idempotency-Key: a self-test, the checker
#                        should then report retries applied twice
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"

profile=${1:-short}
case "$profile" in
  short | long) ;;
  *) echo "usage: $0 [short|long]" >&2; exit 2 ;;
esac

TOXIPROXY_MODULE=github.com/Shopify/toxiproxy/v2/cmd/server
TOXIPROXY_VERSION=v2.5.0
VERSITYGW_MODULE=github.com/versity/versitygw/cmd/versitygw
# One pinned version for both scripts.
VERSITYGW_VERSION=$(sed -n 's/^VERSITYGW_VERSION=//p' scripts/services.sh)
BIN=${MONTY_SERVICES_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/bin}
VERSITYGW=$BIN/versitygw-$VERSITYGW_VERSION
TOXIPROXY=$BIN/toxiproxy-server-$TOXIPROXY_VERSION

command -v redis-server >/dev/null || apt_install redis-server
go_tool "$VERSITYGW_MODULE" "$VERSITYGW_VERSION" "$VERSITYGW"
go_tool "$TOXIPROXY_MODULE" "$TOXIPROXY_VERSION" "$TOXIPROXY"

# The work directory holds the logs, Redis's and the S3 server's data and
# the directory store's tmpfs; it is on the file system of $TMPDIR, which
# must have extended attributes for versitygw (see scripts/services.sh).
work=$(mktemp -d "${TMPDIR:-/tmp}/monty-faults.XXXXXX")
driver_pid=
cleanup() {
  local rc=$?
  if [ -n "$driver_pid" ] && kill -0 "$driver_pid" 2>/dev/null; then
    # The driver's servers die with it (they are started with a parent
    # death signal).
    kill "$driver_pid" 2>/dev/null || true
    wait "$driver_pid" 2>/dev/null || true
  fi
  if mountpoint -q "$work/dirstore" 2>/dev/null; then umount -l "$work/dirstore" || true; fi
  if [ -n "${FAULTS_KEEP:-}" ] || [ "$rc" -ne 0 ]; then
    say "logs and data kept in $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building monty and the driver"
go build -o "$work/monty" ./cmd/monty
(cd scripts/faults && go build -o "$work/faults" .)

say "profile $profile; work directory $work"
"$work/faults" -profile "$profile" -work "$work" \
  -monty "$work/monty" -redis-server "$(command -v redis-server)" \
  -versitygw "$VERSITYGW" -toxiproxy "$TOXIPROXY" \
  ${FAULTS_FIGURES:+-figures "$FAULTS_FIGURES"} ${FAULTS_ONLY:+-only "$FAULTS_ONLY"} \
  ${FAULTS_NO_KEY:+-no-idempotency-key} &
driver_pid=$!
wait "$driver_pid"
