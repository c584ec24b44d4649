#!/usr/bin/env bash
# Installs the Python clients written by others that the tests drive monty
# with, into a virtual environment of their own, from PyPI at the versions
# pinned in testdata/clients/requirements.txt:
#   - mcp (the official MCP Python SDK): its stdio client against `monty mcp`;
#   - ag-ui-protocol: ag_ui.core's event models validate every SSE frame of
#     `monty serve`;
#   - pydantic-monty: upstream Monty's release build, to compare errors with.
#
#   scripts/pyclients.sh env   create the environment when missing (or when the
#                              pins changed) and print the export line for the
#                              tests (MONTY_TEST_PYTHON)
#
# Typical use:  eval "$(scripts/pyclients.sh env)"   (scripts/test.sh does this)
# Settings:
#   MONTY_PYCLIENTS_DIR  where environments are kept, one per set of pins;
#                        default ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/pyclients
#   PYTHON               the interpreter to make it with (default python3, >= 3.10)
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIREMENTS=testdata/clients/requirements.txt
ROOT=${MONTY_PYCLIENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/pyclients}
PY=${PYTHON:-python3}

log() { echo "pyclients: $*" >&2; }
die() { log "$*"; exit 1; }

[ "${1:-}" = env ] || die "usage: $0 env"
command -v "$PY" >/dev/null || die "$PY is missing: install Python 3.10 or newer"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$PY is older than 3.10"

# One environment per set of pins and interpreter version, so that a change
# of either makes a new one and an interrupted install is never taken for done.
key=$( (cat "$REQUIREMENTS"; "$PY" -V) | sha256sum | cut -c1-16)
venv=$ROOT/$key
if [ ! -f "$venv/.complete" ]; then
  log "installing the client packages from PyPI into $venv (once; about 30 s)"
  rm -rf "$venv"
  mkdir -p "$ROOT"
  "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQUIREMENTS" >&2 ||
    { rm -rf "$venv"; die "pip install failed (is PyPI reachable?)"; }
  touch "$venv/.complete"
fi
echo "export MONTY_TEST_PYTHON=$venv/bin/python"
