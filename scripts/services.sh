#!/usr/bin/env bash
# Starts the real servers that the tests of session/store/{redisstore,s3store,tiered}
# need, on free loopback ports, with throwaway data directories:
#   - redis-server from Debian's package (installed with apt-get when missing),
#     no persistence;
#   - versitygw (an S3-compatible gateway; posix backend), built once from the
#     Go module proxy at a pinned version and cached.
#
#   scripts/services.sh start   install what is missing, start both (a no-op when running)
#   scripts/services.sh env     print the export line for the tests (MONTY_TEST_*)
#   scripts/services.sh stop    stop both and remove their data
#   scripts/services.sh status  say what runs (exit 0 only when both run)
#
# Typical use:  scripts/services.sh start && eval "$(scripts/services.sh env)"
# Settings:
#   MONTY_SERVICES_DIR   state (pid files, logs, data, env file);
#                        default ${TMPDIR:-/tmp}/monty-services-$UID
#   MONTY_SERVICES_BIN   where built server binaries are cached;
#                        default ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/bin
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSITYGW_MODULE=github.com/versity/versitygw/cmd/versitygw
VERSITYGW_VERSION=v1.8.0
S3_BUCKET=monty-test
S3_ACCESS_KEY=montytest

STATE=${MONTY_SERVICES_DIR:-${TMPDIR:-/tmp}/monty-services-$(id -u)}
BIN=${MONTY_SERVICES_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/bin}
ENV_FILE=$STATE/env
VERSITYGW=$BIN/versitygw-$VERSITYGW_VERSION

# alive PIDFILE: the process named in PIDFILE runs.
alive() {
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# port_open PORT: something accepts connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port: a loopback port nobody listens on (checked, then used at once).
free_port() {
  local port i
  for i in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! port_open "$port"; then
      echo "$port"
      return 0
    fi
  done
  die "no free port found"
}

# wait_for WHAT PIDFILE CHECK...: wait up to 30 s for CHECK to succeed while
# the process in PIDFILE lives.
wait_for() {
  local what=$1 pidfile=$2 i
  shift 2
  for i in $(seq 1 300); do
    if "$@"; then return 0; fi
    alive "$pidfile" || return 1
    sleep 0.1
  done
  say "$what did not become ready in 30 s"
  return 1
}

install_redis() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  # Debian's postinst may try to start the system-wide service; ours runs apart.
  apt_install redis-server
}

install_versitygw() {
  # About 2.5 min on 2 cores, once.
  go_tool "$VERSITYGW_MODULE" "$VERSITYGW_VERSION" "$VERSITYGW"
}

redis_ready() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

start_redis() {
  if alive "$STATE/redis.pid" && [ -s "$STATE/redis.port" ] && redis_ready "$(cat "$STATE/redis.port")"; then
    return 0
  fi
  local port try
  mkdir -p "$STATE/redis"
  for try in 1 2 3; do
    port=$(free_port)
    rm -f "$STATE/redis.pid"
    redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
      --save '' --appendonly no --dir "$STATE/redis" \
      --daemonize yes --pidfile "$STATE/redis.pid" --logfile "$STATE/redis.log" >&2 || true
    # The pid file appears once the daemon runs.
    local i
    for i in $(seq 1 50); do [ -s "$STATE/redis.pid" ] && break; sleep 0.1; done
    if wait_for redis "$STATE/redis.pid" redis_ready "$port"; then
      echo "$port" >"$STATE/redis.port"
      say "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$port"
      return 0
    fi
    say "redis did not start on port $port (attempt $try); log: $STATE/redis.log"
  done
  tail -n 20 "$STATE/redis.log" >&2 || true
  die "could not start redis-server"
}

start_s3() {
  if alive "$STATE/s3.pid" && [ -s "$STATE/s3.port" ] && port_open "$(cat "$STATE/s3.port")"; then
    return 0
  fi
  local port try secret
  secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  echo "$secret" >"$STATE/s3.secret"
  mkdir -p "$STATE/s3root"
  for try in 1 2 3; do
    port=$(free_port)
    # The posix backend keeps object metadata in extended attributes (user.*),
    # so $STATE must be on a file system that has them (ext4, xfs, btrfs;
    # tmpfs since Linux 6.6). Its --sidecar mode would avoid that but is not
    # atomic: under concurrent conditional PUTs it loses updates and serves
    # bodies with another write's metadata, which the tests catch.
    ROOT_ACCESS_KEY="$S3_ACCESS_KEY" ROOT_SECRET_KEY="$secret" \
      nohup "$VERSITYGW" --port "127.0.0.1:$port" --quiet \
      posix "$STATE/s3root" \
      >"$STATE/s3.log" 2>&1 </dev/null &
    echo $! >"$STATE/s3.pid"
    if wait_for versitygw "$STATE/s3.pid" port_open "$port"; then
      echo "$port" >"$STATE/s3.port"
      say "versitygw $VERSITYGW_VERSION on 127.0.0.1:$port (data in $STATE/s3root)"
      return 0
    fi
    say "versitygw did not start on port $port (attempt $try); log: $STATE/s3.log"
    stop_pid "$STATE/s3.pid"
  done
  tail -n 20 "$STATE/s3.log" >&2 || true
  die "could not start versitygw"
}

write_env() {
  local tmp=$ENV_FILE.tmp
  cat >"$tmp" <<EOF
export MONTY_TEST_REDIS_URL=redis://127.0.0.1:$(cat "$STATE/redis.port")/0
export MONTY_TEST_S3_ENDPOINT=127.0.0.1:$(cat "$STATE/s3.port")
export MONTY_TEST_S3_ACCESS_KEY=$S3_ACCESS_KEY
export MONTY_TEST_S3_SECRET_KEY=$(cat "$STATE/s3.secret")
export MONTY_TEST_S3_BUCKET=$S3_BUCKET
EOF
  mv "$tmp" "$ENV_FILE"
}

# stop_pid PIDFILE: stop the process named in PIDFILE (ours only), wait for it.
stop_pid() {
  local pidfile=$1 pid i
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

cmd_start() {
  mkdir -p "$STATE"
  chmod 700 "$STATE"
  install_redis
  install_versitygw
  start_redis
  start_s3
  write_env
}

cmd_stop() {
  [ -d "$STATE" ] || return 0
  stop_pid "$STATE/redis.pid"
  stop_pid "$STATE/s3.pid"
  rm -rf "$STATE"
  say "stopped"
}

cmd_env() {
  [ -s "$ENV_FILE" ] && alive "$STATE/redis.pid" && alive "$STATE/s3.pid" ||
    die "services are not running: run scripts/services.sh start"
  cat "$ENV_FILE"
}

cmd_status() {
  local name rc=0
  for name in redis s3; do
    if alive "$STATE/$name.pid"; then
      echo "$name: running (pid $(cat "$STATE/$name.pid"), port $(cat "$STATE/$name.port" 2>/dev/null))"
    else
      echo "$name: stopped"
      rc=1
    fi
  done
  return $rc
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *) die "usage: $0 start|stop|env|status" ;;
esac
