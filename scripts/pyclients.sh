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
venv=$(PYTHON=$PY scripts/venv.sh "$ROOT" "$REQUIREMENTS" "the client packages")
echo "export MONTY_TEST_PYTHON=$venv/bin/python"
