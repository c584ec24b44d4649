#!/usr/bin/env bash
# Installs the Python clients written by others that the tests drive monty
# with, into a virtual environment of their own, from PyPI at the versions
# pinned in testdata/clients/requirements.txt:
#   - mcp (the official MCP Python SDK): its stdio client against `monty mcp`;
#   - ag-ui-protocol: ag_ui.core's event models validate every SSE frame of
#     `monty serve`;
#   - pydantic-monty: upstream Monty's release build, to compare errors with.
# and, in a second environment on Python 3.12 (langchain-monty needs it), the
# integrations built on pydantic-monty that testdata/clients/integrations
# drives against upstream's worker and ours, pinned in its requirements.txt:
# pydantic-ai-harness, FastMCP, monty-haystack, langchain-monty and
# dspy-monty-interpreter.
#
#   scripts/pyclients.sh env   create the environments when missing (or when
#                              the pins changed) and print the export lines
#                              for the tests (MONTY_TEST_PYTHON,
#                              MONTY_TEST_INTEGRATIONS_PYTHON)
#
# Typical use:  eval "$(scripts/pyclients.sh env)"   (scripts/test.sh does this)
# Settings:
#   MONTY_PYCLIENTS_DIR  where environments are kept, one per set of pins;
#                        default ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/pyclients
#   PYTHON               the interpreter to make the first with (default
#                        python3, >= 3.10)
#   PYTHON312            the Python 3.12 to make the second with (default:
#                        python3.12 on PATH, else pyenv's newest 3.12; the
#                        machine image has one, nothing is downloaded)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"

[ "${1:-}" = env ] || die "usage: $0 env"
root=${MONTY_PYCLIENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/pyclients}
venv=$(PYTHON=${PYTHON:-python3} scripts/venv.sh "$root" testdata/clients/requirements.txt "the client packages")
echo "export MONTY_TEST_PYTHON=$venv/bin/python"

# The first candidate that runs as 3.12 (pyenv's shim on PATH does not
# unless 3.12 is pyenv's selected version).
py312=
for c in ${PYTHON312:-} $(command -v python3.12 || true) \
  $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | sort -rV); do
  if "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    py312=$c
    break
  fi
done
[ -n "$py312" ] ||
  die "no Python 3.12 for the integrations (langchain-monty needs >= 3.12): install python3.12 or set PYTHON312"
ivenv=$(PYTHON=$py312 scripts/venv.sh "$root" testdata/clients/integrations/requirements.txt "the Monty integrations")
echo "export MONTY_TEST_INTEGRATIONS_PYTHON=$ivenv/bin/python"
