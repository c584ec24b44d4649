#!/usr/bin/env bash
# Installs the pinned toolchain that builds wasm/monty.wasm (Debian packages:
# Rust 1.96 with its standard library sources, lld, wasi-libc; and wabt's
# wat2wasm for the AOT engine's test module, scripts/aot.sh --stamp),
# idempotently.
# rustup cannot download the wasm32-wasip1 target on these machines, so the
# standard library is built from rust-web-src (-Zbuild-std) instead.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=toolchain.env
. "$repo/scripts/toolchain.env"
if [ "$(/usr/bin/rustc --version 2>/dev/null)" = "$RUSTC_VERSION" ] && [ -f /usr/lib/wasm32-wasi/libc.a ] \
  && [ -f /usr/lib/wasm32-wasi/crt1-reactor.o ] && command -v wat2wasm >/dev/null; then
  echo "install-toolchain: already installed ($RUSTC_VERSION)" >&2
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
# The pinned Rust comes from bookworm-security: add the suite only when no
# source names it yet (a second entry with other options breaks apt).
if ! grep -rqs 'bookworm-security' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "deb http://deb.debian.org/debian-security bookworm-security main" | $sudo tee /etc/apt/sources.list.d/monty-security.list >/dev/null
fi
$sudo apt-get update -qq
# wabt (wat2wasm) is not in toolchain.env, which the module's stamp covers:
# it builds only the AOT engine's test module, checked by its own checksum.
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $DEBIAN_PACKAGES wabt=1.0.32-1
echo "install-toolchain: installed $(/usr/bin/rustc --version)" >&2
