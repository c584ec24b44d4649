#!/usr/bin/env bash
# The serverless example's cold start in a fresh container, on both
# engines (docs/http.md#cold-start-on-the-ahead-of-time-engine):
#
#   scripts/bench_container.sh [RUNS]     # as root; RUNS per image (default 9)
#
# It builds examples/serverless statically (CGO_ENABLED=0) on the
# ahead-of-time engine (scripts/aotgo.sh: about 10 GB the first time the
# translated package compiles) and on wazero with `monty precompile`'s
# machine code beside it, makes two images of them with buildah (the final
# stage of docs/http.md's Dockerfiles on `scratch`: this machine reaches no
# image registry, so neither the golang build stage nor distroless/static,
# about 2 MB of certificates, time zones and passwd, can be pulled), and
# runs scripts/bench_serverless.py --container: each run a fresh runc
# container, timed to its first `POST /exec` answer, the two images
# alternating, with their sizes and memory. podman, buildah and runc come
# from Debian's packages (installed when missing); Redis and the S3 server
# from scripts/services.sh (started and stopped here when not running).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
runs=${1:-9}
say() { echo "bench_container.sh: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "run as root (runc makes the containers)"; exit 1; }
missing=()
for tool in podman buildah runc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi
tmp=$(mktemp -d)
aot_image=localhost/monty-serverless-aot:bench
wazero_image=localhost/monty-serverless-wazero:bench
stop_services=false
cleanup() {
  podman rmi -f "$aot_image" "$wazero_image" >/dev/null 2>&1 || true
  rm -rf "$tmp"
  if $stop_services; then scripts/services.sh stop >&2; fi
}
trap cleanup EXIT

if ! scripts/services.sh status >/dev/null 2>&1; then
  scripts/services.sh start >&2
  stop_services=true
fi
eval "$(scripts/services.sh env)"

say "building examples/serverless on both engines (CGO_ENABLED=0)"
mkdir -p "$tmp/aot" "$tmp/wazero"
make -s aot >&2
CGO_ENABLED=0 scripts/aotgo.sh build -o "$tmp/aot/app" ./examples/serverless
CGO_ENABLED=0 go build -ldflags=-w -o "$tmp/wazero/app" ./examples/serverless
CGO_ENABLED=0 go build -ldflags=-w -o "$tmp/monty" ./cmd/monty
"$tmp/monty" precompile --cache-dir "$tmp/wazero/monty-cache" >&2

cat >"$tmp/aot/Containerfile" <<'EOF'
FROM scratch
COPY app /app
ENTRYPOINT ["/app"]
EOF
cat >"$tmp/wazero/Containerfile" <<'EOF'
FROM scratch
COPY app /app
COPY monty-cache /monty-cache
ENV MONTY_CACHE_DIR=/monty-cache
ENTRYPOINT ["/app"]
EOF
buildah bud -q -t "$aot_image" "$tmp/aot" >&2
buildah bud -q -t "$wazero_image" "$tmp/wazero" >&2

python3 scripts/bench_serverless.py --container "$aot_image" "$wazero_image" --runs "$runs"
