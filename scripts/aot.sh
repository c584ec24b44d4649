#!/usr/bin/env bash
# Generates the two modules translated to Go ahead of time by the pinned
# wasm2go and checks them against the committed wasm/aot/translated.sha256,
# which also names the modules they come from:
#   * the interpreter, wasm/monty.wasm -> wasm/aot/internal/translated;
#   * the type checker, wasm/checker/checker.wasm -> wasm/aot/internal/checker;
#   * a test module of stray memory accesses,
#     runtime/internal/stray/testdata/stray.wasm (from stray.wat) ->
#     runtime/internal/stray, with the interpreter's edits; small, and
#     committed, so that the tests of package runtime run it, with -race.
# Each translation is wasm2go's output with the checked edits below (linear
# memory from the host, guard pages, small fills as word stores, each
# function's one view of memory), split by
# scripts/aotsplit into a package of its API (module.go; source.go naming
# the module's SHA-256),
# state/ (the instance's fields) and part00/ ... (the functions, about 2 MB
# of source each), which the go command compiles in parallel, each in a
# fraction of the memory one package of the whole needed
# (docs/building.md#the-ahead-of-time-engine).
# Nothing is done when they already match. With --stamp (after `make wasm`),
# regenerates them (stray.wasm too, with wat2wasm) and rewrites the
# checksum file instead. The generated files but stray's are not committed on main; a release commits them
# (scripts/aot-release.sh; docs/building.md says why).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# The translator, pinned: its output is checked byte for byte.
WASM2GO=github.com/ncruces/wasm2go@v0.4.21
sums=wasm/aot/translated.sha256
stray=runtime/internal/stray/testdata/stray
# files: what translated.sha256 covers, in its order: the modules, what
# they are translated into, and the generator (this script and
# scripts/aotsplit), so that a change to it without --stamp fails here.
files() {
  printf '%s\n' wasm/monty.wasm $(find wasm/aot/internal/translated -name '*.go' | LC_ALL=C sort) \
    wasm/checker/checker.wasm $(find wasm/aot/internal/checker -name '*.go' | LC_ALL=C sort) \
    "$stray.wat" "$stray.wasm" $(ls runtime/internal/stray/*.go | LC_ALL=C sort) \
    scripts/aot.sh scripts/aotsplit/main.go
}
if [ "${1:-}" != --stamp ] && [ -f wasm/aot/internal/translated/module.go ] && [ -f wasm/aot/internal/checker/module.go ] &&
  sha256sum --quiet -c "$sums" >/dev/null 2>&1 && [ "$(files)" = "$(awk '{print $2}' "$sums")" ]; then
  echo "aot: wasm/aot/internal/translated, wasm/aot/internal/checker and runtime/internal/stray are up to date" >&2
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# edit FILE PATTERN REPLACEMENT [LINES]: sed -E on FILE (every match on a
# line), which must match LINES lines (1 unless told; "some": at least one),
# so that another wasm2go output fails here instead of compiling unedited.
edit() {
  local n want=${4:-1}
  n=$(LC_ALL=C grep -cE "$2" "$1" || true)
  if [ "$want" = some ] && [ "$n" -gt 0 ]; then
    want=$n
  fi
  [ "$n" = "$want" ] || { echo "aot: $WASM2GO's output has $n lines matching '$2' (want $want): update the edits in scripts/aot.sh" >&2; exit 1; }
  LC_ALL=C sed -i -E "s/$2/$3/g" "$1"
}

# translate WASM PKG: wasm2go of WASM into $tmp/PKG/module.go, with New
# taking its linear memory from the host (package runtime and
# runtime/typecheck map a range the memory grows into in place) instead of
# allocating and zeroing it on the Go heap: pages the module never writes
# then cost no memory.
translate() {
  local wasm=$1 pkg=$2
  mkdir -p "$tmp/$pkg"
  echo "aot: translating $wasm with $WASM2GO (about 2 minutes)" >&2
  # -unsafe: the memory helpers inline into the largest functions (the
  # safe translation is 1.4-2x slower; performance.md); their bounds
  # checks go where there are guard pages (guard, below).
  GOFLAGS= GOWORK=off go run "$WASM2GO" -unsafe -pkg "$pkg" -o "$tmp/$pkg/module.go" <"$wasm"
  edit "$tmp/$pkg/module.go" '^[[:blank:]]m\.memory = make\(\[\]byte, (0x[0-9a-f]+|[0-9]+)\)$' '\tm.memory = newMemory(v0, \1)'
  fill "$tmp/$pkg/module.go"
}

# fill FILE: memory.fill as wasm2go writes it stores the byte and then
# doubles what is written with copy, a call to memmove per doubling (seven
# for a 112-byte fill); up to 128 bytes, words are stored instead, 2-4x
# faster from 8 to 112 bytes (docs/performance.md). The bounds are checked
# by the same slicing as before, ahead of any store.
fill() {
  local f=$1
  LC_ALL=C perl -0777 -i -pe '
    BEGIN { $body = join "", <STDIN> }
    $n = s/^func memory_fill\[T uint32 \| uint64\]\(mem \[\]byte, dest T, val int32, n T\) \{\n.*?^\}\n/$body/ms;
    END { exit($n == 1 ? 0 : 3) }' "$f" <<'GO' || { echo "aot: $WASM2GO's output has no memory_fill as scripts/aot.sh knows it: update fill" >&2; exit 1; }
func memory_fill[T uint32 | uint64](mem []byte, dest T, val int32, n T) {
	x := uint64(dest)
	y := x + uint64(n)
	buf := mem[x:y:len(mem)]
	switch {
	case len(buf) < 8:
		for i := range buf {
			buf[i] = byte(val)
		}
	case len(buf) <= 128:
		// Words, the last one overlapping the one before it.
		p := uint64(uint8(val)) * 0x0101010101010101
		for i := 0; i+8 <= len(buf); i += 8 {
			binary.LittleEndian.PutUint64(buf[i:], p)
		}
		binary.LittleEndian.PutUint64(buf[len(buf)-8:], p)
	default:
		buf[0] = byte(val)
		for i := 1; i < len(buf); {
			chunk := min(i, 8192)
			i += copy(buf[i:], buf[:chunk])
		}
	}
}
GO
}

# view FILE: each translated function (fnN, not the exports) that loads or
# stores takes a view of linear memory once, at its start (mem :=
# viewOf(&m.memory)), and makes its accesses through it
# (load32(bytesOf(mem), ...)) instead of through m.memory. With guard
# pages the view is the slice itself, whose base never moves and whose
# length bounds nothing, so the compiler keeps the base in a register (or
# one stack slot across calls) instead of reloading it from the instance
# at every access after a store: 0.94x on the geometric mean of the
# kernels in a warm interpreter, 0.95x as whole processes
# (docs/performance.md). Without guard pages the view is a pointer to
# m.memory, read at each access as before, since a memory.grow may
# lengthen the slice or move it to the Go heap.
view() {
  local f=$1
  LC_ALL=C perl -0777 -i -pe '
    s{^(func \(m \*Module\) fn[0-9]+\([^\n]*\{\n)(.*?^\}\n)}{
      my ($head, $body) = ($1, $2);
      $body =~ s/\b(load16|load32|load64|store16|store32|store64|byteAt)\(m\.memory, /$1(bytesOf(mem), /g
        ? ($viewed++, "$head\tmem := viewOf(&m.memory)\n$body") : "$head$body"
    }gmse;
    END { exit($viewed > 0 ? 0 : 3) }' "$f" || { echo "aot: no function of $WASM2GO's output accesses memory as scripts/aot.sh knows: update view" >&2; exit 1; }
}

# source PKG WASM: $tmp/PKG/source.go, naming WASM's SHA-256.
source_go() {
  local pkg=$1 wasm=$2
  cat >"$tmp/$pkg/source.go" <<GO
// Code generated by scripts/aot.sh. DO NOT EDIT.

package $pkg

// WasmSHA256 is the SHA-256 of the $(basename "$wasm") this package was translated from.
const WasmSHA256 = "$(sha256sum "$wasm" | cut -d' ' -f1)"
GO
}

# Guard pages (docs/building.md#guard-pages): where GUARDED holds, linear
# memory is a reservation of all a wasm32 access can reach (a 32-bit
# address plus a 32-bit offset) with access rights only up to the memory's
# length, so a stray load or store faults (package runtime turns the fault
# into a trap) and the translated code checks no bounds. Elsewhere, and
# with the build tag monty_boundscheck, every access is checked. The
# expression is written once, into both files' build lines: exactly one of
# them is compiled on any platform, and without either a build fails
# (guarded undefined) rather than drop the checks.
GUARDED='(linux || darwin) && (amd64 || arm64) && !monty_boundscheck'

# guard PKG WASM [limited]: the edits and files that give PKG guard pages
# where GUARDED holds: memory.grow through growMemory, which grants access
# rights (or fails past the host's cap); the memory helpers' bounds check
# only where not guarded; every byte access (m.memory[i]) through byteAt;
# and source.go, guard_pages.go and guard_checked.go. Where GUARDED does not
# hold, memory comes from the host's reservation when it offers one; with
# "limited" (the type checker) it must, and memory.grow past the
# reservation fails there too (the checker's memory limit, and the range
# its host takes the access rights of to stop a check), instead of moving
# to the Go heap for the host to enforce its cap after the call.
guard() {
  local pkg=$1 wasm=$2 limited=${3:-} f=$tmp/$1/module.go
  edit "$f" '^[[:blank:]]\*mem = append\(buf, make\(\[\]byte, int\(new<<16\)-len\)\.\.\.\)$' \
    '\tgrown, ok := growMemory(buf, int(new<<16))\n\tif !ok {\n\t\treturn -1\n\t}\n\t*mem = grown'
  # One bounds check in each of the helpers wasm2go emitted (those the
  # module uses: load16 to store64).
  edit "$f" '^[[:blank:]]_ = mem\[uint64\(addr\)\+([137])\]$' '\tif !guarded {\n\t\t_ = mem[uint64(addr)+\1]\n\t}' \
    "$(grep -cE '^func (load|store)(16|32|64)\[' "$f")"
  edit "$f" 'm\.memory\[([^][]*)\]' '*byteAt(m.memory, \1)' some
  if grep -q 'm\.memory\[' "$f"; then
    echo "aot: $WASM2GO's output indexes linear memory in a way scripts/aot.sh does not rewrite: update the edits" >&2
    exit 1
  fi
  view "$f"
  source_go "$pkg" "$wasm"
  cat >"$tmp/$pkg/guard_pages.go" <<GO
// Code generated by scripts/aot.sh. DO NOT EDIT.

//go:build $GUARDED

package $pkg

import (
	"syscall"
	"unsafe"
)

// guarded is true: linear memory has guard pages, and no access checks
// its bounds. A stray one faults, which the host turns into a trap.
const guarded = true

// byteAt returns the byte of linear memory at addr, unchecked: past the
// memory's length, it has no access rights.
//
//go:nosplit
func byteAt[T uint32 | uint64](mem []byte, addr T) *byte {
	return (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(mem)), addr))
}

// viewOf returns the view of linear memory a translated function takes at
// its start for its loads and stores: the slice itself, since its base
// never moves and its length bounds no access, so a memory.grow during
// the function leaves the view valid.
//
//go:nosplit
func viewOf(mem *[]byte) []byte { return *mem }

// bytesOf returns the linear memory view shows.
//
//go:nosplit
func bytesOf(view []byte) []byte { return view }

// newMemory returns a new instance's linear memory, size bytes of zeros in
// the host's reservation of all a wasm32 access can reach, accessible up
// to size, with capacity up to the host's cap. Without one, the instance
// cannot run: it has no other bounds.
func newMemory(host any, size int) []byte {
	if h, ok := host.(interface{ NewGuardedMemory(size int) []byte }); ok {
		if b := h.NewGuardedMemory(size); b != nil {
			return b
		}
	}
	panic("the host reserved no guarded linear memory")
}

// growMemory extends linear memory to size bytes by granting access to
// the pages up to it; false past the host's cap.
func growMemory(buf []byte, size int) ([]byte, bool) {
	if size > cap(buf) || syscall.Mprotect(buf[len(buf):size], syscall.PROT_READ|syscall.PROT_WRITE) != nil {
		return buf, false
	}
	return buf[:size], true
}
GO
  cat >"$tmp/$pkg/guard_checked.go" <<GO
// Code generated by scripts/aot.sh. DO NOT EDIT.

//go:build !($GUARDED)

package $pkg

// guarded is false: every access to linear memory checks its bounds.
const guarded = false

// byteAt returns the byte of linear memory at addr; it panics past the
// memory's length.
//
//go:nosplit
func byteAt[T uint32 | uint64](mem []byte, addr T) *byte {
	return &mem[addr]
}

// viewOf returns the view of linear memory a translated function takes at
// its start for its loads and stores: a reference to the instance's slice,
// since a memory.grow during the function may lengthen it or move it.
//
//go:nosplit
func viewOf(mem *[]byte) *[]byte { return mem }

// bytesOf returns the linear memory view shows now.
//
//go:nosplit
func bytesOf(view *[]byte) []byte { return *view }

GO
  if [ "$limited" = limited ]; then
    cat >>"$tmp/$pkg/guard_checked.go" <<'GO'
// newMemory returns a new instance's linear memory: size bytes of zeros at
// the start of the range the host reserved for it to grow into. The
// module cannot run without one.
func newMemory(host any, size int) []byte {
	if h, ok := host.(interface{ NewMemory(size int) []byte }); ok {
		if b := h.NewMemory(size); b != nil {
			return b
		}
	}
	panic("the host reserved no linear memory")
}

// growMemory extends linear memory to size bytes within the host's
// reservation; false past it.
func growMemory(buf []byte, size int) ([]byte, bool) {
	if size > cap(buf) {
		return buf, false
	}
	return buf[:size], true
}
GO
    return
  fi
  cat >>"$tmp/$pkg/guard_checked.go" <<GO
// newMemory returns a new instance's linear memory, size bytes of zeros:
// the host's (package runtime reserves an address range for it to grow
// into) when it offers one, else from the Go heap.
func newMemory(host any, size int) []byte {
	if h, ok := host.(interface{ NewMemory(size int) []byte }); ok {
		if b := h.NewMemory(size); b != nil {
			return b
		}
	}
	return make([]byte, size)
}

// growMemory extends linear memory to size bytes. The bytes past its
// length are zeros the module never reached, so memory with room is
// resliced, not cleared: a reserved range's pages cost nothing until the
// module writes them. Past the room, it moves to the Go heap; the host
// enforces its cap after the call.
func growMemory(buf []byte, size int) ([]byte, bool) {
	if size <= cap(buf) {
		return buf[:size], true
	}
	return append(buf, make([]byte, size-len(buf))...), true
}
GO
}

# The interpreter, with guard pages.
translate wasm/monty.wasm translated
guard translated wasm/monty.wasm

# A test module of stray loads and stores (runtime/internal/stray), with
# the interpreter's edits; committed, it is regenerated and compared here
# (and replaced only by --stamp).
if [ "${1:-}" = --stamp ]; then
  command -v wat2wasm >/dev/null || { echo "aot: wat2wasm (Debian's wabt, scripts/install-toolchain.sh) is needed for $stray.wasm" >&2; exit 1; }
  wat2wasm "$stray.wat" -o "$stray.wasm"
fi
translate "$stray.wasm" stray
guard stray "$stray.wasm"

# The type checker, with guard pages too. Its memory lives only in the
# host's reservation, up to the checker's memory limit: memory.grow past it
# fails (returns -1), as it does on wazero with the same limit, and the
# checker's allocator then ends the check with its out-of-memory exit.
translate wasm/checker/checker.wasm checker
guard checker wasm/checker/checker.wasm limited

# Both split into packages that compile in parallel.
for pkg in translated checker; do
  echo "aot: splitting $pkg into packages" >&2
  go run ./scripts/aotsplit -dir "$tmp/$pkg" -path "github.com/monty-go/monty/wasm/aot/internal/$pkg" \
    -shared guard_pages.go,guard_checked.go
done

mkdir -p wasm/aot/internal # not in a fresh clone: everything in it is generated
for pkg in translated checker; do
  rm -rf "wasm/aot/internal/$pkg"
  mv "$tmp/$pkg" "wasm/aot/internal/$pkg"
done
# same_go A B: directories A and B hold the same .go files, byte for byte.
same_go() {
  [ "$(cd "$1" && ls -- *.go)" = "$(cd "$2" && ls -- *.go)" ] || return 1
  local f
  for f in "$1"/*.go; do cmp -s "$f" "$2/${f##*/}" || return 1; done
}
# runtime/internal/stray holds only generated files.
if [ "${1:-}" = --stamp ]; then
  rm -f runtime/internal/stray/*.go
  mv "$tmp/stray"/*.go runtime/internal/stray/
elif ! same_go "$tmp/stray" runtime/internal/stray; then
  echo "aot: runtime/internal/stray differs from its translation: run scripts/aot.sh --stamp" >&2
  exit 1
fi
if [ "${1:-}" = --stamp ]; then
  files | xargs sha256sum >"$sums"
  echo "aot: wrote $sums" >&2
elif ! sha256sum --quiet -c "$sums" || [ "$(files)" != "$(awk '{print $2}' "$sums")" ]; then
  echo "aot: the translation differs from $sums: a module changed without 'scripts/aot.sh --stamp', or the translator is not reproducible" >&2
  exit 1
else
  echo "aot: wasm/aot/internal/translated, wasm/aot/internal/checker and runtime/internal/stray generated and checked against $sums" >&2
fi
