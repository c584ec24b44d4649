#!/usr/bin/env bash
# Builds what a release ships (docs/building.md#releasing):
#
#   scripts/release.sh wheel    --out DIR [--platform P] [--version V] [--engine E]
#   scripts/release.sh archives --out DIR [--targets T,T,...] [--engine E] VERSION
#   scripts/release.sh image    --out DIR [--version V] [--engine E] [--check]
#   scripts/release.sh check    [--out DIR] [--engine E]
#
# wheel: the monty-go wheel, which installs `monty` into the environment's
# scripts directory, where pydantic-monty-client looks for its worker
# first: the lean build (the monty_lean tag: no monty serve, monty mcp,
# --connect, OTLP export, Redis or S3 store; docs/building.md#the-lean-build),
# which starts a worker sooner; archives and the image carry the full one. P is a target (linux/amd64, linux/arm64, darwin/arm64,
# darwin/amd64, windows/amd64) or its wheel-style name (linux-x86_64,
# linux-aarch64, macos-arm64, macos-x86_64, win-amd64); default this
# machine's. archives: a tar.gz (zip for Windows) per target (default all
# five) holding the binary, LICENSE, the third-party notices and the SBOM,
# with SHA256SUMS beside them. image: an OCI archive of `monty serve`
# (scripts/release/Dockerfile: the linux/amd64 binary on scratch, uid
# 65532), made with buildah; the signing key and API keys come from the
# container's environment; --check then starts it under runc and checks
# it (scripts/release/run_image.py). check: what CI checks (the wheel in a fresh
# venv with pydantic-monty-client, a session on it under an empty
# environment, a clean uninstall; two linux/amd64 archives of one commit
# byte for byte, SHA256SUMS, the binary).
#
# VERSION is MAJOR.MINOR.PATCH, optionally with aN, bN, rcN or .devN
# (PEP 440, and a Go version once prefixed with v); wheel and image default
# to 0.0.0.devN, N the number of commits of HEAD. Binaries are built with
# -trimpath, no VCS stamp and CGO_ENABLED=0, stamped with the version and
# the commit; every file packed carries the commit's time: the same commit,
# toolchain and flags give the same bytes.
#
# Engines (--engine, default by target): aot links the interpreter and the
# type checker translated to Go ahead of time (make aot; the translations
# compile in a few minutes and about 1 GB, once per target: Go's build
# cache keeps them) and embeds neither wasm module (MONTY_AOT_NOEMBED=1 of
# scripts/aotgo.sh); aot-interp links the interpreter only and embeds
# checker.wasm, the type checker on wazero (Windows, where only wazero can
# stop a running check); wazero links neither (seconds to build; the
# modules compile at first use). The SBOM comes from cyclonedx-gomod (installed at a pinned
# version into ~/.cache/monty-go/tools) and scripts/release/pack.py, which packs everything.
set -euo pipefail
tool=release
. "$(dirname "$0")/lib.sh"
cd "$repo"
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

cyclonedx=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
all_targets=(linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64)
cli=github.com/monty-go/monty/cmd/monty/cli

[ $# -ge 1 ] || usage
cmd=$1
shift
out="" platform="" version="" engine="" targets="" run_check=false
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --platform) platform=${2:?--platform needs a target}; shift 2 ;;
    --version) version=${2:?--version needs a version}; shift 2 ;;
    --engine) engine=${2:?--engine needs aot, aot-interp or wazero}; shift 2 ;;
    --targets) targets=${2:?--targets needs a list}; shift 2 ;;
    --check) run_check=true; shift ;;
    -h | --help) usage ;;
    -*) die "unknown flag $1" ;;
    *) args+=("$1"); shift ;;
  esac
done
[ -n "$out" ] || [ "$cmd" = check ] || die "--out DIR is required"
case $engine in "" | aot | aot-interp | wazero) ;; *) die "--engine $engine: want aot, aot-interp or wazero" ;; esac

# target_of P: the GOOS/GOARCH target a --platform names.
target_of() {
  case $1 in
    linux/amd64 | linux-x86_64 | manylinux*x86_64 | musllinux*x86_64) echo linux/amd64 ;;
    linux/arm64 | linux-aarch64 | manylinux*aarch64 | musllinux*aarch64) echo linux/arm64 ;;
    darwin/arm64 | macos-arm64 | macosx*arm64) echo darwin/arm64 ;;
    darwin/amd64 | macos-x86_64 | macosx*x86_64) echo darwin/amd64 ;;
    windows/amd64 | win-amd64 | win_amd64) echo windows/amd64 ;;
    *) die "unknown platform $1 (want one of ${all_targets[*]}, or linux-x86_64, linux-aarch64, macos-arm64, macos-x86_64, win-amd64)" ;;
  esac
}

# engine_for TARGET: the engine a release builds for it (docs/building.md
# says why).
engine_for() {
  if [ -n "$engine" ]; then echo "$engine"; return; fi
  case $1 in windows/*) echo aot-interp ;; *) echo aot ;; esac
}

check_version() {
  [[ $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+((a|b|rc)[0-9]+)?(\.dev[0-9]+)?$ ]] ||
    die "version $1: want MAJOR.MINOR.PATCH, optionally with aN, bN, rcN or .devN (no leading v)"
}

commit=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  say "warning: the working tree has uncommitted changes; the binaries say commit $commit-dirty"
  commit=$commit-dirty
fi
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${out:-$work/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# sbom_tool: cyclonedx-gomod at the pinned version, installed once into
# monty-go's cache directory.
sbom_tool() {
  local bin=${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/tools/${cyclonedx##*/}
  bin=${bin/@/-}
  if [ ! -x "$bin/cyclonedx-gomod" ]; then
    (cd "$work" && GOBIN=$bin GOWORK=off GOFLAGS= go install "$cyclonedx") >&2
  fi
  echo "$bin/cyclonedx-gomod"
}

# build TARGET VERSION [lean]: the monty binary for TARGET into
# $work/TARGET/ (with lean, the lean build, the monty_lean tag, into
# $work/TARGET_lean/), with its notices and SBOM beside it; prints the
# binary's path.
build() {
  local target=$1 version=$2 variant=${3:-} eng dir start=$SECONDS exe=monty tags=()
  eng=$(engine_for "$target")
  dir=$work/${target/\//_}${variant:+_$variant}
  [ "$variant" != lean ] || tags=(-tags=monty_lean)
  [ "${target%/*}" = windows ] && exe=monty.exe
  mkdir -p "$dir"
  local ldflags="-s -w -X $cli.Version=v$version -X $cli.Commit=$commit"
  local goenv=(GOOS="${target%/*}" GOARCH="${target#*/}" CGO_ENABLED=0)
  if [ "$eng" != wazero ] && ! sha256sum --quiet -c wasm/aot/translated.sha256 >/dev/null 2>&1; then
    say "generating the translated modules (make aot)"
    scripts/aot.sh >&2
  fi
  if [ "$eng" = wazero ]; then
    say "building $target on the wazero engine"
  else
    say "building $target on the $eng engine (the first build for a target compiles the translations: a few minutes)"
  fi
  case $eng in
    wazero) env "${goenv[@]}" go build -trimpath "${tags[@]}" -buildvcs=false -ldflags="$ldflags" -o "$dir/$exe" ./cmd/monty ;;
    aot) env "${goenv[@]}" MONTY_LEAN=$([ "$variant" = lean ] && echo 1 || echo 0) MONTY_AOT_NOEMBED=1 \
      scripts/aotgo.sh build -buildvcs=false -ldflags="$ldflags" -o "$dir/$exe" ./cmd/monty ;;
    aot-interp) env "${goenv[@]}" MONTY_LEAN=$([ "$variant" = lean ] && echo 1 || echo 0) MONTY_AOT_NOEMBED=1 MONTY_AOT_CHECKER=0 \
      scripts/aotgo.sh build -buildvcs=false -ldflags="$ldflags" -o "$dir/$exe" ./cmd/monty ;;
  esac >&2
  say "built $target${variant:+ ($variant)} in $((SECONDS - start)) s: $(du -m "$dir/$exe" | cut -f1) MB"
  # The SBOM of the Go modules the binary links (its build information),
  # their licenses looked up in the module cache.
  (cd "$work" && "$(sbom_tool)" bin -json -noserial -notimestamp -licenses \
    -version "v$version" -output "$dir/raw.cdx.json" "$dir/$exe") >"$dir/cyclonedx.log" 2>&1 ||
    { cat "$dir/cyclonedx.log" >&2; die "cyclonedx-gomod failed on $target"; }
  python3 scripts/release/pack.py sbom --raw "$dir/raw.cdx.json" --version "$version" --out "$dir/monty-go.cyclonedx.json"
  python3 scripts/release/pack.py notices --binary "$dir/$exe" --out "$dir/THIRD_PARTY_NOTICES.md"
  echo "$dir/$exe"
}

default_version() {
  echo "0.0.0.dev$(git rev-list --count HEAD)"
}

case $cmd in
  wheel)
    [ ${#args[@]} -eq 0 ] || die "wheel takes no argument (${args[*]}): the version is --version V"
    version=${version:-$(default_version)}
    check_version "$version"
    target=$(target_of "${platform:-$(go env GOOS)/$(go env GOARCH)}")
    bin=$(build "$target" "$version" lean)
    dir=$(dirname "$bin")
    python3 scripts/release/pack.py wheel --binary "$bin" --target "$target" --version "$version" \
      --sbom "$dir/monty-go.cyclonedx.json" --notices "$dir/THIRD_PARTY_NOTICES.md" --out "$out"
    ;;
  archives)
    [ ${#args[@]} -eq 1 ] || die "archives takes one VERSION (e.g. 0.1.0)"
    version=${args[0]#v}
    check_version "$version"
    [ -z "$platform" ] || die "archives takes --targets, not --platform"
    IFS=, read -r -a list <<<"${targets:-$(IFS=,; echo "${all_targets[*]}")}"
    for t in "${list[@]}"; do
      target=$(target_of "$t")
      start=$SECONDS
      bin=$(build "$target" "$version")
      dir=$(dirname "$bin")
      python3 scripts/release/pack.py archive --binary "$bin" --target "$target" --version "$version" \
        --sbom "$dir/monty-go.cyclonedx.json" --notices "$dir/THIRD_PARTY_NOTICES.md" --out "$out"
      say "$target done in $((SECONDS - start)) s"
    done
    python3 scripts/release/pack.py sums "$out"
    (cd "$out" && sha256sum --quiet -c SHA256SUMS) || die "SHA256SUMS does not verify"
    cat "$out/SHA256SUMS"
    ;;
  image)
    [ ${#args[@]} -eq 0 ] || die "image takes no argument (${args[*]}): the version is --version V"
    version=${version:-$(default_version)}
    check_version "$version"
    [ "$(id -u)" = 0 ] || die "run as root (buildah builds the image)"
    command -v buildah >/dev/null || {
      say "installing buildah from Debian's packages"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q buildah >&2
    }
    target=linux/$(go env GOARCH)
    bin=$(build "$target" "$version")
    dir=$(dirname "$bin")
    ctx=$work/context
    mkdir -p "$ctx"
    cp "$bin" scripts/release/Dockerfile docs/LICENSE "$dir/THIRD_PARTY_NOTICES.md" "$dir/monty-go.cyclonedx.json" "$ctx/"
    # TLS roots for S3, Redis, OTLP and MCP servers: the Mozilla set of
    # Debian's ca-certificates package, not this machine's trust store
    # (which may hold local additions).
    [ -d /usr/share/ca-certificates/mozilla ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q ca-certificates >&2
    cat /usr/share/ca-certificates/mozilla/*.crt >"$ctx/ca-certificates.crt"
    image=localhost/monty-go:$version
    archive=$out/monty-go_${version}_${target/\//_}.oci.tar
    # chroot isolation: the Dockerfile runs nothing, and this machine's
    # OCI runtimes cannot run a build step (scripts/bench/container.sh).
    buildah build --quiet --isolation chroot --timestamp "$SOURCE_DATE_EPOCH" \
      --build-arg VERSION="$version" --build-arg COMMIT="$commit" -t "$image" -f "$ctx/Dockerfile" "$ctx" >/dev/null
    rm -f "$archive"
    buildah push --quiet "$image" "oci-archive:$archive:monty-go:$version" >&2
    buildah rmi "$image" >/dev/null
    say "image $archive: $(du -m "$archive" | cut -f1) MB"
    if $run_check; then
      command -v runc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q runc >&2
      eval "$(scripts/pyclients.sh env)"
      python3 scripts/release/run_image.py "$archive" "$MONTY_TEST_PYTHON" "$(engine_for "$target" | cut -d- -f1)" >&2
    fi
    echo "$archive"
    ;;
  check)
    # What CI checks of a release (scripts/test.sh), on linux/amd64.
    [ ${#args[@]} -eq 0 ] || die "check takes no argument"
    eng=$(engine_for linux/amd64)
    [ "$(go env GOOS)/$(go env GOARCH)" = linux/amd64 ] || die "check runs on linux/amd64"
    # Bad input is refused before anything is built.
    ! "$0" wheel --out "$out/bad" --platform plan9/amd64 2>/dev/null || die "an unknown platform was accepted"
    ! "$0" archives --out "$out/bad" 1.2 2>/dev/null || die "version 1.2 was accepted"
    ! "$0" archives --out "$out/bad" --engine fast 1.2.3 2>/dev/null || die "engine fast was accepted"
    # The wheel: its contents, then in a fresh venv beside
    # pydantic-monty-client only.
    "$0" wheel --out "$out/wheel" --engine "$eng" --version 0.0.1 >/dev/null
    python3 scripts/release/pack.py verify-wheel "$out"/wheel/monty_go-0.0.1-*.whl >&2 || die "the wheel is not what it should be"
    venv=$out/venv
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "pydantic-monty-client==$(monty_version)" >&2
    listing() { (cd "$venv" && find . -not -path '*/__pycache__*' | sort); }
    listing >"$out/before"
    "$venv/bin/pip" install -q --disable-pip-version-check "$out"/wheel/monty_go-0.0.1-*.whl >&2
    ! "$venv/bin/pip" show -q pydantic-monty-runtime 2>/dev/null || die "the venv holds upstream's runtime"
    [ "$(find "$venv" -name 'monty' -type f | wc -l)" = 1 ] || die "more than one monty in the venv: $(find "$venv" -name monty -type f)"
    say "wheel: $("$venv/bin/monty" version | tr '\n' ' ')"
    "$venv/bin/monty" version --json | python3 -c '
import json, sys
v, want = json.load(sys.stdin), sys.argv[1]
engine = "aot" if want.startswith("aot") else "wazero"
checker = "aot" if want == "aot" else "wazero"
got = (v["version"], v["engine"], v["type_checker"], v["build"])
sys.exit(None if got == ("v0.0.1", engine, checker, "lean") else f"the wheel binary says {got}, want v0.0.1, {engine}, {checker}, lean")' "$eng"
    # A session, on an empty environment: the client finds the wheel's
    # binary on its own.
    env -i "$venv/bin/python" testdata/clients/wheel_session.py >&2 || die "the pydantic-monty session on the wheel failed"
    "$venv/bin/pip" uninstall -q -y monty-go >&2
    listing >"$out/after"
    diff -u "$out/before" "$out/after" >&2 || die "pip uninstall monty-go left files behind (above)"
    say "wheel: installed, ran a pydantic-monty session on the wheel's worker, uninstalled cleanly"
    # The archives, twice: the same bytes, SHA256SUMS that verify, and a
    # binary that runs.
    for n in 1 2; do
      "$0" archives --out "$out/archives$n" --targets linux/amd64 --engine "$eng" 0.0.1 >/dev/null
    done
    diff -r "$out/archives1" "$out/archives2" >&2 || die "two releases of one commit differ"
    (cd "$out/archives1" && sha256sum --quiet -c SHA256SUMS) || die "SHA256SUMS does not verify"
    tar -xzf "$out/archives1/monty-go_0.0.1_linux_amd64.tar.gz" -C "$out"
    entries=$(tar -tzf "$out/archives1/monty-go_0.0.1_linux_amd64.tar.gz" | tr '\n' ' ')
    [ "$entries" = "monty-go_0.0.1_linux_amd64/LICENSE monty-go_0.0.1_linux_amd64/THIRD_PARTY_NOTICES.md monty-go_0.0.1_linux_amd64/monty monty-go_0.0.1_linux_amd64/monty-go.cyclonedx.json " ] ||
      die "the archive holds $entries"
    v=$("$out/monty-go_0.0.1_linux_amd64/monty" version) # not piped into grep -q: SIGPIPE under pipefail
    grep -qx 'monty-go v0.0.1' <<<"$v" || die "the archive's binary does not run monty version"
    say "archives: two releases are byte-identical, SHA256SUMS verifies, the binary runs"
    ;;
  *) usage ;;
esac
