#!/usr/bin/env bash
# Releases github.com/monty-go/monty/wasm/aot so that `go get` fetches it
# from the module proxy (docs/building.md#releasing-the-ahead-of-time-module).
#
#   scripts/aot-release.sh VERSION         # e.g. v0.3.0, at HEAD of main
#   scripts/aot-release.sh --check [--build]
#
# The translated packages (79 MB of generated Go for the interpreter,
# 108 MB for the type checker, each split into some 50 packages of about
# 2 MB by scripts/aot.sh) are never committed on main. A release commits them on a commit of its own, a child of the
# released main commit that no branch holds, and tags that commit
# wasm/aot/VERSION; the main module is tagged VERSION at HEAD (made here
# when missing). The release commit's wasm/aot/go.mod requires
# github.com/monty-go/monty at VERSION, without the replace that main's
# workspace uses, so the pair resolves from the proxy like any modules.
# Nothing is pushed: the script prints the push to make.
#
# --check makes a release of HEAD in a temporary clone (version
# v0.0.0-check, from the translation `make aot` generated here), serves both
# modules from a file proxy written by scripts/modproxy the way the public
# proxy makes module zips, and in a new module outside this repository runs
# `go get github.com/monty-go/monty/wasm/aot@v0.0.0-check`, `go mod tidy`
# and `go list` of a program importing it and wasm/aot/checker, then checks
# the translated files in the module cache against
# wasm/aot/translated.sha256. With --build it also builds that program
# (the translated packages compile again: a few
# minutes) and runs print(1) on it. `make test-aot` runs --check.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
gens=(wasm/aot/internal/translated wasm/aot/internal/checker)

# release REPO VERSION: tags VERSION at REPO's HEAD (when missing) and
# makes the release commit tagged wasm/aot/VERSION, with REPO's generated
# translation.
release() {
  local dir=$1 version=$2 head tree wt
  git -C "$dir" diff --quiet HEAD -- || die "$dir has uncommitted changes: release a commit"
  head=$(git -C "$dir" rev-parse HEAD)
  if git -C "$dir" rev-parse -q --verify "refs/tags/$version" >/dev/null; then
    [ "$(git -C "$dir" rev-parse "$version^{commit}")" = "$head" ] ||
      die "tag $version exists and is not HEAD ($head): release the commit it tags, or choose another version"
  else
    git -C "$dir" tag "$version" "$head"
  fi
  ! git -C "$dir" rev-parse -q --verify "refs/tags/wasm/aot/$version" >/dev/null ||
    die "tag wasm/aot/$version exists already"
  (cd "$dir" && sha256sum --quiet -c wasm/aot/translated.sha256) ||
    die "$dir/wasm/aot/internal is missing or not the translation of the committed modules: run 'make aot' first"
  wt=$(mktemp -d)
  git -C "$dir" worktree add -q --detach "$wt" "$head"
  for gen in "${gens[@]}"; do
    mkdir -p "$wt/$gen"
    cp -R "$dir/$gen"/. "$wt/$gen/"
  done
  (cd "$wt/wasm/aot" &&
    GOWORK=off go mod edit -dropreplace=github.com/monty-go/monty -require="github.com/monty-go/monty@$version")
  git -C "$wt" add -f "${gens[@]}" wasm/aot/go.mod
  git -C "$wt" -c user.name="${GIT_AUTHOR_NAME:-monty-go release}" -c user.email="${GIT_AUTHOR_EMAIL:-release@monty-go.invalid}" \
    commit -q -m "wasm/aot $version: the interpreter and type checker translated to Go, for the module proxy

The generated packages (scripts/aot.sh, checked against
wasm/aot/translated.sha256) is committed here only, on this release
commit that no branch holds; wasm/aot/go.mod requires
github.com/monty-go/monty $version, the commit this one follows."
  git -C "$dir" tag "wasm/aot/$version" "$(git -C "$wt" rev-parse HEAD)"
  git -C "$dir" worktree remove --force "$wt"
}

if [ "${1:-}" != --check ]; then
  [ $# -eq 1 ] || { echo "usage: scripts/aot-release.sh VERSION | --check [--build]" >&2; exit 2; }
  version=$1
  [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "$version is not a version like v0.3.0"
  cd "$repo"
  scripts/aot.sh
  release "$repo" "$version"
  say "tagged $version (the main module) and wasm/aot/$version (its translation)"
  say "check them with: go run ./scripts/modproxy -repo . -out /tmp/proxy $version wasm/aot/$version"
  say "publish with:    git push origin $version wasm/aot/$version"
  exit 0
fi

build=false
[ "${2:-}" = --build ] && build=true
version=v0.0.0-check
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$repo"
scripts/aot.sh
say "a release of HEAD as $version in a temporary clone"
git clone -q --shared "$repo" "$tmp/repo"
for gen in "${gens[@]}"; do
  mkdir -p "$tmp/repo/$gen"
  cp -R "$gen"/. "$tmp/repo/$gen/"
done
release "$tmp/repo" "$version"
[ -z "$(git -C "$tmp/repo" branch --contains "wasm/aot/$version")" ] || die "a branch holds the release commit"
for gen in "${gens[@]}"; do
  git -C "$tmp/repo" cat-file -e "$version:$gen/module.go" 2>/dev/null && die "the main module's commit holds $gen"
done

go run ./scripts/modproxy -repo "$tmp/repo" -out "$tmp/proxy" "$version" "wasm/aot/$version"

# A program of another module, resolving everything offline: our two
# modules from the file proxy, the rest from this machine's module cache
# (its download directory is a proxy too), into a module cache of its own.
app=$tmp/app
mkdir -p "$app"
cat >"$app/main.go" <<'GO'
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	_ "github.com/monty-go/monty/wasm/aot"
	_ "github.com/monty-go/monty/wasm/aot/checker"
)

// must stops the program at the first error.
func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	ctx := context.Background()
	engine, err := runtime.NewEngine(ctx)
	must(err)
	it, err := engine.NewInterpreter(ctx)
	must(err)
	prog, err := it.Compile(ctx, "print(1)")
	must(err)
	_, err = prog.Run(ctx)
	must(err)
	checker, err := typecheck.New(ctx)
	must(err)
	fmt.Print(it.Output(), engine.CompileInfo().AOT, " ", checker.CompileInfo().AOT)
}
GO
export GOWORK=off GOFLAGS=-mod=mod GOSUMDB=off GOMODCACHE=$tmp/modcache \
  GOPROXY="file://$tmp/proxy,file://$(go env GOMODCACHE)/cache/download"
cd "$app"
go mod init example.com/app >/dev/null 2>&1
go get "github.com/monty-go/monty/wasm/aot@$version" >&2
go mod tidy >&2
grep -q "github.com/monty-go/monty $version" go.mod || die "go get did not resolve github.com/monty-go/monty at $version: $(cat go.mod)"
for gen in "${gens[@]}"; do
  pkg=github.com/monty-go/monty/$gen
  dir=$(go list -f '{{.Dir}}' "$pkg")
  case $dir in "$GOMODCACHE"/*) ;; *) die "$pkg resolved to $dir, not the module cache" ;; esac
  grep " $gen/" "$repo/wasm/aot/translated.sha256" | sed "s# $gen/# #" >"$tmp/translated.sha256"
  (cd "$dir" && sha256sum --quiet -c "$tmp/translated.sha256") ||
    die "the files of $pkg fetched from the proxy differ from wasm/aot/translated.sha256"
  # Not piped into grep -q: under pipefail, go list killed by the pipe
  # closing early (SIGPIPE) would fail the check.
  deps=$(go list -deps .)
  grep -qx "$pkg" <<<"$deps" || die "the program does not link $pkg"
done
say "go get, go mod tidy and go list of a program importing wasm/aot@$version and wasm/aot/checker: ok"
if $build; then
  say "building that program (compiles the translated packages: a few minutes)"
  go build \
    -gcflags='github.com/monty-go/monty/wasm/aot/internal/translated/...=-dwarf=false -c=1' \
    -gcflags='github.com/monty-go/monty/wasm/aot/internal/checker/...=-dwarf=false -c=1' -ldflags='-s -w' -o app .
  out=$(./app)
  [ "$out" = $'1\ntrue true' ] || die "the program printed $out (want 1, then true true: both on the AOT engine)"
  say "the program built from the proxy printed 1 on the AOT engine, and its type checker runs translated too"
fi
