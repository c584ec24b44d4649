#!/usr/bin/env bash
# A/B of release profiles and codegen features for the interpreter module:
# builds each variant (once; later runs reuse it) and scores them all in one
# run of scripts/bench/moduleab, so the ratios come from the same process, the same
# machine and the same moment.
#
#   scripts/bench/module-ab.sh              # build what is missing, then score
#   scripts/bench/module-ab.sh build        # only build
#   scripts/bench/module-ab.sh score        # only score (variants not built are left out)
#   VARIANTS="o2 simd" scripts/bench/module-ab.sh    (default: o2 os oz simd wasmopt)
#
# Variants (baseline is always scored, and is the committed wasm/monty.wasm):
#   o2        CARGO_PROFILE_RELEASE_OPT_LEVEL=2
#   os        CARGO_PROFILE_RELEASE_OPT_LEVEL=s
#   oz        CARGO_PROFILE_RELEASE_OPT_LEVEL=z
#   simd      opt-level 3 with -C target-feature=+simd128 (std included: -Zbuild-std)
#   wasmopt   baseline after `$WASM_OPT $WASM_OPT_FLAGS` (default -O3), a
#             post-pass, no cargo build; WASM_OPT defaults to the wasm-opt of
#             npm's binaryen@$BINARYEN_VERSION (132.0.0), installed into
#             $MODULE_AB_DIR/binaryen; left out when neither can be had
#
# Each cargo variant is built by scripts/build-wasm.sh (through its OUT
# argument, CARGO_TARGET_DIR, cargo's CARGO_PROFILE_RELEASE_* variables and
# MONTY_EXTRA_RUSTFLAGS) into $MODULE_AB_DIR/<variant>/ (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/module-ab). A variant is rebuilt
# only when its key (the checksums of the module's inputs, as in the stamp,
# plus the variant's settings) changed. Builds run one after another: every
# build re-creates wasm/.patched first, which would pull the sources from
# under a build running in parallel. Each takes 12-20 minutes on two cores.
#
# The baseline is scored twice (baseline-again; AA=0 leaves it out), so the
# table shows how far two identical modules land apart in the same run.
# Scoring settings are passed through: COLD (default 3), WARM (7), RUNS (21):
# see scripts/bench/moduleab/main.go. moduleab is built with -tags perfmap, so its
# table also gives the machine code wazero makes of the dispatch loop
# (Monty's VM::run) and of the whole module.
#
# A variant of the sources rather than of the settings (a patch under
# wasm/patches/, say) is scored by building it with scripts/build-wasm.sh
# into a file and passing that to moduleab next to the committed module.
set -euo pipefail
tool=bench-module-ab
. "$(dirname "$0")/../lib.sh"
cd "$repo"
mode=${1:-all}
case $mode in all | build | score) ;; *)
  echo "usage: $0 [all|build|score]" >&2
  exit 2
  ;;
esac
dir=${MODULE_AB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/monty-go/module-ab}
variants=${VARIANTS:-o2 os oz simd wasmopt}
binaryen_version=${BINARYEN_VERSION:-132.0.0}
wasm_opt=${WASM_OPT:-$dir/binaryen/node_modules/.bin/wasm-opt}
wasm_opt_flags=${WASM_OPT_FLAGS:--O3}
mkdir -p "$dir"

# settings prints a variant's build settings as env assignments (cargo
# variants) or "post-pass" (wasm-opt); an unknown variant is an error.
settings() {
  case $1 in
  o2) echo "CARGO_PROFILE_RELEASE_OPT_LEVEL=2" ;;
  os) echo "CARGO_PROFILE_RELEASE_OPT_LEVEL=s" ;;
  oz) echo "CARGO_PROFILE_RELEASE_OPT_LEVEL=z" ;;
  simd) echo "MONTY_EXTRA_RUSTFLAGS=-C target-feature=+simd128" ;;
  wasmopt) echo "post-pass" ;;
  *)
    echo "module-ab: unknown variant $1" >&2
    return 1
    ;;
  esac
}

# inputs_key: the checksums of everything the module is built from.
inputs_key() {
  for f in $(scripts/stamp-inputs.sh); do sha256sum "$f"; done
}

build_variant() {
  local v=$1 s key out
  s=$(settings "$v")
  out=$dir/$v/monty.wasm
  mkdir -p "$dir/$v"
  if [ "$s" = post-pass ]; then
    if [ -z "${WASM_OPT:-}" ] && ! [ -x "$wasm_opt" ] && command -v npm >/dev/null; then
      npm install --no-audit --no-fund --prefix "$dir/binaryen" "binaryen@$binaryen_version" >&2 || true
    fi
    if ! command -v "$wasm_opt" >/dev/null; then
      echo "module-ab: $wasm_opt not found; leaving out $v" >&2
      return 0
    fi
    key=$(printf '%s\n%s %s\n' "$(sha256sum wasm/monty.wasm)" "$("$wasm_opt" --version)" "$wasm_opt_flags")
  else
    key=$(printf '%s\n%s\n' "$(inputs_key)" "$s")
  fi
  if [ -f "$out" ] && [ "$(cat "$dir/$v/key" 2>/dev/null)" = "$key" ]; then
    echo "module-ab: $v is built ($out)" >&2
    return 0
  fi
  rm -f "$out" "$dir/$v/key"
  echo "module-ab: building $v ($s) at $(date +%T)" >&2
  if [ "$s" = post-pass ]; then
    # Rust's wasm32-wasip1 default features; binaryen must not drop them.
    # shellcheck disable=SC2086
    "$wasm_opt" $wasm_opt_flags --enable-bulk-memory --enable-sign-ext \
      --enable-mutable-globals --enable-nontrapping-float-to-int \
      --enable-reference-types --enable-multivalue \
      wasm/monty.wasm -o "$out.tmp"
  else
    (
      # shellcheck disable=SC2163,SC2086
      export "$s"
      CARGO_TARGET_DIR=$dir/$v/target scripts/build-wasm.sh "$out.tmp"
    ) >"$dir/$v/build.log" 2>&1 || {
      echo "module-ab: building $v failed; see $dir/$v/build.log" >&2
      return 1
    }
    # The module is what is kept; the target directory is 0.6 GB.
    rm -rf "$dir/$v/target"
  fi
  mv "$out.tmp" "$out"
  printf '%s\n' "$key" >"$dir/$v/key"
  echo "module-ab: built $v at $(date +%T): $(stat -c %s "$out") bytes" >&2
}

if [ "$mode" != score ]; then
  for v in $variants; do build_variant "$v"; done
fi
[ "$mode" = build ] && exit 0

args=("baseline=$repo/wasm/monty.wasm")
# The baseline a second time (A/A): how far apart identical modules land,
# the noise against which the other ratios are read. AA=0 leaves it out.
[ "${AA:-1}" = 0 ] || args+=("baseline-again=$repo/wasm/monty.wasm")
for v in $variants; do
  settings "$v" >/dev/null
  if [ -f "$dir/$v/monty.wasm" ]; then
    args+=("$v=$dir/$v/monty.wasm")
  else
    echo "module-ab: $v is not built; leaving it out" >&2
  fi
done
go build -tags perfmap -o "$dir/moduleab" ./scripts/bench/moduleab
exec "$dir/moduleab" -cold "${COLD:-3}" -warm "${WARM:-7}" -runs "${RUNS:-21}" "${args[@]}"
