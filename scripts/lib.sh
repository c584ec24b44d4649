# The helpers the project's shell scripts share: sourced, never run.
# A script sources it first thing:
#
#   . "$(dirname "$0")/lib.sh"       # a script in scripts/
#   . "$(dirname "$0")/../lib.sh"    # one in a folder of scripts/
#
# It sets repo, the repository's root, and tool, the name the script's
# messages start with (its file name less .sh, unless the script set tool
# before). The scripts a module is built from (scripts/stamp-inputs.sh) do
# not source it, so that editing this file never makes the committed
# modules stale.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${tool:=$(basename "$0" .sh)}"

# say MESSAGE...: a line to stderr, after the script's name.
say() { echo "$tool: $*" >&2; }

# die MESSAGE...: say it, and exit 1.
die() {
  say "$*"
  exit 1
}

# as_root COMMAND...: run COMMAND as root (through sudo, unless root).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install PACKAGE...: install Debian packages (the package lists are
# updated once when the first try fails).
apt_install() {
  command -v apt-get >/dev/null || die "$* missing and apt-get is not available: install them by hand"
  say "installing $* with apt-get"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2; then
    as_root apt-get update -q >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2 || die "apt-get could not install $*"
  fi
}

# go_tool MODULE VERSION DEST: build the command MODULE@VERSION from the Go
# module proxy into DEST, once (nothing to do when DEST exists).
go_tool() {
  local module=$1 version=$2 dest=$3 tmp start
  [ -x "$dest" ] && return 0
  command -v go >/dev/null || die "go is needed to build $module"
  say "building $module@$version from the Go module proxy (once)"
  mkdir -p "$(dirname "$dest")"
  tmp=$(mktemp -d)
  start=$(date +%s)
  # Outside the repository, so that its go.mod plays no part.
  (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "$module@$version") >&2 ||
    {
      rm -rf "$tmp"
      die "building $module failed"
    }
  mv "$tmp/$(basename "$module")" "$dest"
  rm -rf "$tmp"
  say "built in $(($(date +%s) - start)) s: $dest"
}

# listening_port PID: wait (up to 60 s: a first start may compile the
# module) until process PID listens on a TCP port, and print the port
# (what `monty serve --addr 127.0.0.1:0` picked, whatever its log level);
# fails at once when PID has exited.
listening_port() {
  local port
  for _ in $(seq 600); do
    port=$(ss -ltnp 2>/dev/null | awk -v pid="pid=$1," '$0 ~ pid {split($4, a, ":"); print a[length(a)]; exit}')
    [ -n "$port" ] && echo "$port" && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# monty_version prints the version of Monty the project builds, from its
# one source: the pin of the monty crate in wasm/Cargo.toml. The pins
# that must be literal (the other Cargo manifests, the Python
# requirements, wasm.MontyVersion) are checked against it by
# wasm/version_test.go.
monty_version() {
  sed -n 's/^monty = "=\([^"]*\)".*/\1/p' "$repo/wasm/Cargo.toml"
}
