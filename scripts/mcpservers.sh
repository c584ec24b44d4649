#!/usr/bin/env bash
# Installs MCP servers written by others, which the tests connect to as an
# MCP client (github.com/modelcontextprotocol/go-sdk), at pinned versions:
#   - @modelcontextprotocol/server-everything from npm: the protocol's
#     reference "everything" server (plain, structured-output, long-running
#     with progress, annotated, image and resource tools), served over stdio
#     and over streamable HTTP;
#   - mcp-server-time from PyPI: get_current_time and convert_time, with
#     structured output, built on the MCP Python SDK.
#
#   scripts/mcpservers.sh env   install them when missing (or when the pins
#                               changed) and print the export lines for the
#                               tests (MONTY_TEST_MCP_*)
#
# Typical use:  eval "$(scripts/mcpservers.sh env)"   (scripts/test.sh does this)
#
# Exported (each a command line: words separated by single spaces, so the
# cache directory's path must not contain white space; split with
# strings.Fields, as session/mcpclient/mcptest does):
#   MONTY_TEST_MCP_EVERYTHING       node .../server-everything/dist/index.js stdio
#   MONTY_TEST_MCP_EVERYTHING_HTTP  node .../server-everything/dist/index.js streamableHttp
#       Serves streamable HTTP at http://localhost:$PORT/mcp. The port is the
#       PORT environment variable (default 3001), chosen by the test: PORT=0
#       would work but the server then logs "port 0", so pick a free port
#       first. It listens on every interface (there is no host setting); it
#       logs "MCP Streamable HTTP Server listening on port N" on stderr when
#       ready and chatters on stdout for every request.
#   MONTY_TEST_MCP_TIME             .../venv/bin/mcp-server-time --local-timezone UTC
#
# Both installs take about 20 s together (npm about 5 s, pip about 12 s),
# once per set of pins and Python version.
# Settings:
#   MONTY_MCPSERVERS_DIR  where installs are kept, one per set of pins;
#                         default ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/mcpservers
#   PYTHON                the interpreter for the time server's virtual
#                         environment (default python3, >= 3.10)
#   NODE, NPM             node (>= 20) and npm (default: the ones on PATH)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"

EVERYTHING_PACKAGE=@modelcontextprotocol/server-everything
EVERYTHING_VERSION=2026.8.31
# npm resolves the package's own dependencies (declared with ^ ranges) as
# the registry stood at this moment, so every install gets the same tree.
NPM_BEFORE=2026-11-25T00:00:00Z
TIME_VERSION=2026.10.19
# The time server's dependencies, as resolved on the day of the pin
# (pip constraints: only those needed are installed).
TIME_CONSTRAINTS='annotated-types==0.8.0
anyio==4.16.0
attrs==26.1.0
cffi==2.1.1
click==8.5.1
cryptography==50.0.2
h11==0.16.0
httpcore2==2.16.2
httpx2==2.16.2
idna==3.20
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
mcp==2.3.0
mcp-types==2.3.0
opentelemetry-api==1.45.2
pycparser==3.12
pydantic==2.14.4
pydantic_core==2.50.5
PyJWT==2.15.1
python-multipart==0.0.34
referencing==0.37.0
rpds-py==2026.9.1
sse-starlette==3.7.0
starlette==1.10.0
truststore==0.10.5
typing-inspection==0.4.5
typing_extensions==4.16.0
tzdata==2026.6
tzlocal==5.4.5
uvicorn==0.54.0'

ROOT=${MONTY_MCPSERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/mcpservers}
PY=${PYTHON:-python3}
NODE=${NODE:-node}
NPM=${NPM:-npm}

[ "${1:-}" = env ] || die "usage: $0 env"
command -v "$NODE" >/dev/null || die "$NODE is missing: install Node.js 20 or newer (with npm)"
command -v "$NPM" >/dev/null || die "$NPM is missing: install npm (it comes with Node.js)"
"$NODE" -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' ||
  die "$NODE is older than 20 ($("$NODE" --version))"
command -v "$PY" >/dev/null || die "$PY is missing: install Python 3.10 or newer"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$PY is older than 3.10"
node_path=$(command -v "$NODE")

# One directory per set of pins and Python version, so that a change of
# either makes a new one and an interrupted install is never taken for done.
key=$( (
  echo "$EVERYTHING_PACKAGE@$EVERYTHING_VERSION before $NPM_BEFORE"
  echo "mcp-server-time==$TIME_VERSION"
  echo "$TIME_CONSTRAINTS"
  "$PY" -V
) | sha256sum | cut -c1-16)
dir=$ROOT/$key
case $dir$node_path in
*[[:space:]]*) die "$dir or $node_path contains white space: set MONTY_MCPSERVERS_DIR (and NODE) to paths without" ;;
esac
everything=$dir/npm/node_modules/$EVERYTHING_PACKAGE/dist/index.js
venv=$dir/venv

if [ ! -f "$dir/.complete" ]; then
  say "installing $EVERYTHING_PACKAGE@$EVERYTHING_VERSION (npm) and mcp-server-time==$TIME_VERSION (PyPI) into $dir (once; about 20 s)"
  rm -rf "$dir"
  mkdir -p "$dir/npm"
  "$NPM" install --prefix "$dir/npm" --no-audit --no-fund --no-update-notifier --loglevel=error \
    --before="$NPM_BEFORE" "$EVERYTHING_PACKAGE@$EVERYTHING_VERSION" >&2 ||
    { rm -rf "$dir"; die "npm install failed (is the npm registry reachable?)"; }
  [ -f "$everything" ] || { rm -rf "$dir"; die "$everything is missing after npm install"; }
  printf '%s\n' "$TIME_CONSTRAINTS" >"$dir/constraints.txt"
  "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
    -c "$dir/constraints.txt" "mcp-server-time==$TIME_VERSION" >&2 ||
    { rm -rf "$dir"; die "pip install failed (is PyPI reachable?)"; }
  touch "$dir/.complete"
fi
echo "export MONTY_TEST_MCP_EVERYTHING='$node_path $everything stdio'"
echo "export MONTY_TEST_MCP_EVERYTHING_HTTP='$node_path $everything streamableHttp'"
echo "export MONTY_TEST_MCP_TIME='$venv/bin/mcp-server-time --local-timezone UTC'"
