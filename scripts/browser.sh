#!/usr/bin/env bash
# Installs the real browser the operator console's tests drive
# (session/httpapi/console): Chromium from Debian's packages (apt-get, once,
# as services.sh installs redis-server) and Playwright for Python from PyPI
# in a virtual environment of its own, at the version pinned in
# testdata/console/requirements.txt. Playwright drives the system Chromium
# (its executable_path): no browser build is ever downloaded, so
# `playwright install` is never run.
#
#   scripts/browser.sh env   install what is missing and print the export
#                            lines for the tests (MONTY_TEST_BROWSER_PYTHON,
#                            MONTY_TEST_CHROMIUM)
#
# Typical use:  eval "$(scripts/browser.sh env)"   (scripts/test.sh does this)
# Settings:
#   MONTY_BROWSER_DIR  where environments are kept, one per set of pins;
#                      default ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/browser
#   PYTHON             the interpreter to make it with (default python3, >= 3.10)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$repo"

REQUIREMENTS=testdata/console/requirements.txt
ROOT=${MONTY_BROWSER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/browser}
PY=${PYTHON:-python3}

# chromium_path prints the system Chromium's executable, if there is one.
chromium_path() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

install_chromium() {
  [ -n "$(chromium_path)" ] && return 0
  apt_install chromium # once
  [ -n "$(chromium_path)" ] || die "chromium still missing after apt-get install"
}

[ "${1:-}" = env ] || die "usage: $0 env"
install_chromium
venv=$(PYTHON=$PY scripts/venv.sh "$ROOT" "$REQUIREMENTS" "Playwright")
echo "export MONTY_TEST_BROWSER_PYTHON=$venv/bin/python"
echo "export MONTY_TEST_CHROMIUM=$(chromium_path)"
