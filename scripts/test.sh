#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
# Needs only Go: the interpreter module is committed. It checks formatting,
# vets, verifies the module stamp (in ./wasm's tests) and runs every test
# with the race detector. Compiled machine code lands in the default cache
# (runtime.DefaultCacheDir: $MONTY_CACHE_DIR, else ~/.cache/monty-go/compiled)
# so the module is compiled once for all test packages.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"
# --- session store services: real Redis and S3-compatible servers for the
# tests of session/store/{redisstore,s3store,tiered} (see scripts/services.sh).
# Servers that were already running (a developer's) are left running.
if ! scripts/services.sh status >/dev/null 2>&1; then
  scripts/services.sh start
  trap 'scripts/services.sh stop' EXIT
fi
eval "$(scripts/services.sh env)"
# --- end of session store services
# --- Python clients written by others (MCP SDK, AG-UI models, upstream
# Monty) for the tests that drive monty through them (scripts/pyclients.sh).
eval "$(scripts/pyclients.sh env)"
# --- MCP servers written by others (the reference "everything" server from
# npm, mcp-server-time from PyPI) for the tests that connect to them as an
# MCP client (scripts/mcpservers.sh; session/mcpclient/mcptest reads the exports).
eval "$(scripts/mcpservers.sh env)"
# --- a real browser for the operator console's tests: Chromium from
# Debian's packages, driven by Playwright for Python (scripts/browser.sh;
# session/httpapi's TestConsoleInBrowser reads the exports).
eval "$(scripts/browser.sh env)"

echo "== gofmt" >&2
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './wasm/target/*'))
[ -z "$unformatted" ] || die "gofmt needed on: $unformatted"
echo "== go vet" >&2
go vet ./...
echo "== CGO_ENABLED=0 cross builds" >&2
for target in linux/amd64 linux/arm64 darwin/arm64 windows/amd64; do
  CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./cmd/monty
  echo "   $target ok" >&2
done
echo "== compile the interpreter and type checker modules once (test binaries share the cache)" >&2
# A plain test binary compiles several times faster than a -race one; the
# -race binaries below then load the machine code from the cache.
go test -count=1 -run '^TestEngineClosed$' ./runtime/ >/dev/null
go test -count=1 -run '^TestSameMontyVersionAsTheInterpreter$' ./runtime/typecheck/ >/dev/null
echo "== go test -race" >&2
go test -race -count=1 -timeout 20m "$@" ./...
echo "== the stray memory accesses again with bounds checks instead of guard pages (-tags monty_boundscheck)" >&2
# What every platform without guard pages runs (docs/building.md#guard-pages):
# the translated test module of stray loads and stores, checked instead.
go test -race -count=1 -tags monty_boundscheck -run '^TestStray' ./runtime/
echo "== the tests on the ahead-of-time engine (make test-aot; MONTY_TEST_AOT=0 leaves them out)" >&2
# The two modules translated to Go (wasm/aot) are generated and checked
# byte for byte, and the translated packages (some 50 per module)
# compiled into Go's build cache once, without -race (about 1 GB of
# memory in all and a few minutes on 2 cores; later runs only link;
# docs/building.md says why no race build); then the runtime,
# session, monty.v1 and type checker tests run on it, the CLI make
# monty-aot builds is checked (TestAOTBinary), the
# serverless example builds on it, and a release of wasm/aot is fetched
# with go get from a local module proxy.
if [ "${MONTY_TEST_AOT:-1}" != 0 ]; then
  make -s test-aot
else
  echo "   MONTY_TEST_AOT=0: not run" >&2
fi
echo "== a release: the wheel in a fresh venv beside pydantic-monty-client, two archives byte for byte (scripts/release.sh check)" >&2
# On the ahead-of-time engine, whose translations test-aot compiled into
# Go's build cache (release builds use the same flags, so they only link);
# with MONTY_TEST_AOT=0, on wazero.
if [ "${MONTY_TEST_AOT:-1}" != 0 ]; then
  scripts/release.sh check
else
  scripts/release.sh check --engine wazero
fi
# --- the fault suite (docs/reliability.md): its checker's tests, then the
# short profile against two monty serve instances with servers of its own.
echo "== fault suite: scripts/faults (go vet, go test -race), scripts/faults.sh short" >&2
(cd scripts/faults && go vet ./... && go test -race -count=1 ./...)
scripts/faults.sh short
# --- end of the fault suite
echo "== nested modules (adapters and examples with their own go.mod): go vet, go test -race" >&2
# Each adapter is a module of its own so the main module does not pull in
# its SDK, and the Kubernetes example so that it does not pull in k8s.io;
# every go.mod under session/agent/adapters and examples/kubernetes is
# tested here.
for mod in $(find session/agent/adapters examples/kubernetes -name go.mod -not -path '*/testdata/*' | sort); do
  dir=$(dirname "$mod")
  echo "   $dir" >&2
  (cd "$dir" && go vet ./... && go test -race -count=1 -timeout 20m "$@" ./...)
done
