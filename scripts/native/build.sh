#!/usr/bin/env bash
# Builds monty-native (the native monty harness) and prints the binary's path.
#
#   scripts/native/build.sh [fetch|check]
#
# With `fetch` it only downloads the locked dependencies (monty 1.4.0 and
# friends, whose test_cases/ the conformance run reads) and prints nothing.
# With `check` it only says (exit status 0 or 1) whether a Rust toolchain
# that can build it is there (scripts/bench/table.sh installs one when not).
#
# monty 1.4.0 needs Rust 1.96: Debian's toolchain in /usr/bin is used when
# present (rustup's default may be older).
set -euo pipefail
tool=native/build
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
if [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ]; then
  export PATH=/usr/bin:$PATH
  export RUSTC=/usr/bin/rustc
fi
if ! command -v cargo >/dev/null; then
  die "cargo not found; install Rust 1.96 (scripts/install-toolchain.sh)"
fi
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n1.96.0\n' "$have" | sort -V | head -1)" != "1.96.0" ]; then
  die "monty $(monty_version) needs rustc >= 1.96.0, found $have (scripts/install-toolchain.sh installs it)"
fi
if [ "${1:-}" = check ]; then
  exit 0
fi
cd "$here"
if [ "${1:-}" = fetch ]; then
  cargo fetch --locked --target "$(rustc -vV | sed -n 's/^host: //p')"
  exit 0
fi
say "cargo build --release --locked (first build takes a few minutes)"
cargo build --release --locked --quiet
echo "${CARGO_TARGET_DIR:-$here/target}/release/monty-native"
