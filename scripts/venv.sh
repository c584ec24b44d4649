#!/usr/bin/env bash
# Makes (once) a Python virtual environment with the packages pinned in a
# requirements file, from PyPI, and prints its path. The environment is kept
# under ROOT, one per set of pins and interpreter version, so that a change
# of either makes a new one, and it is marked complete only once pip
# succeeded, so that an interrupted install is never taken for done.
#
#   scripts/venv.sh ROOT REQUIREMENTS WHAT
#
# WHAT names the packages in the log line of a first install. PYTHON is the
# interpreter to make it with (default python3, 3.10 or newer). Used by
# scripts/pyclients.sh and scripts/browser.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 3 ] || {
  say "usage: $0 ROOT REQUIREMENTS WHAT"
  exit 2
}
root=$1 requirements=$2 what=$3
py=${PYTHON:-python3}

command -v "$py" >/dev/null || die "$py is missing: install Python 3.10 or newer"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$py is older than 3.10"
key=$( (cat "$requirements"; "$py" -V) | sha256sum | cut -c1-16)
venv=$root/$key
if [ ! -f "$venv/.complete" ]; then
  say "installing $what from PyPI into $venv (once)"
  rm -rf "$venv"
  mkdir -p "$root"
  "$py" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2 ||
    { rm -rf "$venv"; die "pip install failed (is PyPI reachable?)"; }
  touch "$venv/.complete"
fi
echo "$venv"
