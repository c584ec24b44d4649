package runtime

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"math"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/internal/guest"
	"github.com/monty-go/monty/runtime/internal/stray"
)

// The accesses of runtime/internal/stray/testdata/stray.wat (monty_call's
// op): the module, translated to Go with the interpreter's edits, makes
// the access a test asks for, anywhere.
const (
	strayLoad8 = iota
	strayStore8
	strayLoad32
	strayStore32
	strayLoad64MaxOffset
	strayStore64MaxOffset
	strayLoad16
	strayGrow
	straySize
	strayLoad8MaxOffset
	strayPrint
	strayPrintThenLoad8
	strayFill
	strayGrowThenAccess
)

// newStray instantiates the stray module as the engine instantiates the
// translated interpreter, its memory capped at maxPages (it starts with
// one page, 64 KiB), and closes it when the test ends.
func newStray(t testing.TB, maxPages uint32) *aotInstance {
	t.Helper()
	a, err := instantiateStray(maxPages)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.close(context.Background()) })
	require.Equal(t, strayGuarded, a.Guarded, "the translation's guard pages and the platform disagree")
	return a
}

// instantiateStray is newStray for any goroutine: the caller closes the
// instance.
func instantiateStray(maxPages uint32) (*aotInstance, error) {
	m := &aotModule{
		newInstance: func(imports AOTImports) AOTInstance { return stray.New(imports) },
		maxBytes:    uint64(maxPages) << 16,
	}
	inst, err := m.instantiate(context.Background(), &Interpreter{})
	if err != nil {
		return nil, err
	}
	return inst.(*aotInstance), nil
}

// strayCall makes access op at addr and returns what it loaded.
func strayCall(a *aotInstance, op int, addr uint32, value int32) (int64, error) {
	v, err := a.call(context.Background(), uint32(op), addr, uint32(value))
	return int64(v), err
}

// requireOutOfBounds: err is the trap of an access past linear memory's
// length, as wazero words it where there are guard pages, and Go's bounds
// check where not.
func requireOutOfBounds(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err, "a stray access did not trap")
	if strayGuarded {
		require.ErrorIs(t, err, guest.ErrOutOfBounds)
		assert.Equal(t, "wasm error: out of bounds memory access", err.Error())
	} else {
		assert.Contains(t, err.Error(), "index out of range")
	}
}

// TestStrayAccessesTrap: every load and store past linear memory's length
// traps (just past it, straddling it, at the 4 GiB edge, with the largest
// offset), the host goes on, and the next instance works; those inside
// it work.
func TestStrayAccessesTrap(t *testing.T) {
	const length = 1 << 16
	a := newStray(t, 4)
	_, err := strayCall(a, strayStore32, length-4, 0x01020304)
	require.NoError(t, err)
	v, err := strayCall(a, strayLoad32, length-4, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 0x01020304, v)
	_, err = strayCall(a, strayStore8, length-1, 0xab)
	require.NoError(t, err)
	v, err = strayCall(a, strayLoad8, length-1, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 0xab, v)

	for _, c := range []struct {
		name string
		op   int
		addr uint32
	}{
		{"load8 just past the length", strayLoad8, length},
		{"store8 just past the length", strayStore8, length},
		{"load16 straddling the end", strayLoad16, length - 1},
		{"load32 straddling the end", strayLoad32, length - 2},
		{"store32 straddling the end", strayStore32, length - 3},
		{"load32 a page past the length", strayLoad32, 2 * length},
		{"load8 at the 4 GiB edge", strayLoad8, math.MaxUint32},
		{"load32 across the 4 GiB edge", strayLoad32, math.MaxUint32 - 1},
		{"store32 across the 4 GiB edge", strayStore32, math.MaxUint32 - 2},
		{"load8 at offset 4 GiB - 1", strayLoad8MaxOffset, 0},
		{"load8 at the largest address and offset", strayLoad8MaxOffset, math.MaxUint32},
		{"load64 at the largest address and offset", strayLoad64MaxOffset, math.MaxUint32},
		{"store64 at the largest address and offset", strayStore64MaxOffset, math.MaxUint32},
		{"load64 at offset 4 GiB - 1", strayLoad64MaxOffset, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newStray(t, 4)
			_, err := strayCall(a, c.op, c.addr, 0x7f)
			requireOutOfBounds(t, err)
			// The instance is discarded; the next one works.
			require.NoError(t, a.close(context.Background()))
			b := newStray(t, 4)
			_, err = strayCall(b, strayStore8, 10, 42)
			require.NoError(t, err)
			v, err := strayCall(b, strayLoad8, 10, 0)
			require.NoError(t, err)
			assert.EqualValues(t, 42, v)
		})
	}
}

// TestStrayGrowth: memory.grow opens pages up to the cap, and the new end
// traps as the old one did; past the cap, memory.grow fails (guard pages)
// or the call traps with ErrMemoryLimit (checked bounds).
func TestStrayGrowth(t *testing.T) {
	const page = 1 << 16
	a := newStray(t, 4)
	old, err := strayCall(a, strayGrow, 0, 2)
	require.NoError(t, err)
	assert.EqualValues(t, 1, old)
	size, err := strayCall(a, straySize, 0, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 3, size)
	_, err = strayCall(a, strayStore32, 3*page-4, 99)
	require.NoError(t, err)
	v, err := strayCall(a, strayLoad32, 3*page-4, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 99, v)
	v, err = strayCall(a, strayLoad32, page, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 0, v, "a grown page is zeros")

	got, err := strayCall(a, strayGrow, 0, 2) // to 5 pages, past the cap of 4
	if strayGuarded {
		require.NoError(t, err)
		assert.EqualValues(t, -1, int32(got), "memory.grow past WithMaxMemoryPages fails")
		size, err = strayCall(a, straySize, 0, 0)
		require.NoError(t, err)
		assert.EqualValues(t, 3, size)
	} else {
		require.ErrorIs(t, err, ErrMemoryLimit)
	}

	b := newStray(t, 4)
	_, err = strayCall(b, strayGrow, 0, 1)
	require.NoError(t, err)
	_, err = strayCall(b, strayLoad8, 2*page, 0)
	requireOutOfBounds(t, err)

	// A cap below the memory the module starts with.
	_, err = instantiateStray(0)
	require.ErrorIs(t, err, ErrMemoryLimit)
}

// TestStrayGrowThenAccess: a function that grows memory and then stores
// and loads in the new pages, in the same call, reaches them: the view of
// linear memory each translated function takes at its start
// (scripts/aot.sh, view) follows a memory.grow. A failed grow leaves the
// pages past the end out of reach (guard pages), or the call traps with
// ErrMemoryLimit (checked bounds, where the memory moved past its cap).
func TestStrayGrowThenAccess(t *testing.T) {
	const page = 1 << 16
	a := newStray(t, 4)
	v, err := strayCall(a, strayGrowThenAccess, 2*page+100, 2)
	require.NoError(t, err)
	assert.EqualValues(t, 0x5a, v, "the byte stored in a page grown by the same call")
	size, err := strayCall(a, straySize, 0, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 3, size)
	v, err = strayCall(a, strayLoad8, 2*page+100, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 0x5a, v)

	_, err = strayCall(a, strayGrowThenAccess, 3*page+100, 2) // to 5 pages, past the cap of 4
	if strayGuarded {
		requireOutOfBounds(t, err)
	} else {
		require.ErrorIs(t, err, ErrMemoryLimit)
	}
}

// TestStrayPrint: the host reads what the module prints within its
// memory, refuses what is past it (the module goes on), and runs the
// print callback with faults not turned into panics: a fault there is the
// host's, not a stray access.
func TestStrayPrint(t *testing.T) {
	a := newStray(t, 4)
	for i, c := range []byte("hello") {
		_, err := strayCall(a, strayStore8, uint32(100+i), int32(c))
		require.NoError(t, err)
	}
	var printed string
	panicOnFault := true
	ctx := WithPrintFunc(context.Background(), func(_ Stream, text string) {
		printed += text
		panicOnFault = debug.SetPanicOnFault(false)
	})
	status, err := a.call(ctx, strayPrint, 100, 5)
	require.NoError(t, err)
	assert.Zero(t, status)
	assert.Equal(t, "hello", printed)
	assert.False(t, panicOnFault, "the print callback ran with SetPanicOnFault on")
	status, err = a.call(ctx, strayPrint, 1<<16-2, 5)
	require.NoError(t, err)
	assert.EqualValues(t, 1, status, "a print past the memory's end is refused")
	v, err := strayCall(a, strayLoad8, 100, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 'h', v)

	// Faults are panics again once the callback returned: a stray load
	// after a print, in the same call, traps.
	loaded, err := a.call(ctx, strayPrintThenLoad8, 100, 1)
	require.NoError(t, err)
	assert.EqualValues(t, 'e', loaded)
	_, err = a.call(ctx, strayPrintThenLoad8, 1<<16-3, 3)
	requireOutOfBounds(t, err)
	assert.Equal(t, "helloh\x00\x00\x00", printed, "the bytes printed before the stray load")
}

// TestStrayConcurrent: instances trapping on many goroutines at once
// (under -race too) each get their own trap, and the others' work is
// unharmed.
func TestStrayConcurrent(t *testing.T) {
	// round stores and loads i at its goroutine's own address, then makes
	// a stray load past the memory's end.
	round := func(g, i int) error {
		a, err := instantiateStray(2)
		if err != nil {
			return err
		}
		defer a.close(context.Background())
		if _, err := strayCall(a, strayStore32, uint32(8*g), int32(i)); err != nil {
			return err
		}
		if v, err := strayCall(a, strayLoad32, uint32(8*g), 0); err != nil || v != int64(i) {
			return fmt.Errorf("goroutine %d: load = %d, %v; want %d", g, v, err, i)
		}
		if _, err := strayCall(a, strayLoad32, 1<<16+uint32(i), 0); err == nil {
			return errors.New("a stray load did not trap")
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				if err := round(g, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStrayGuardPlatforms: exactly one of the translation's two memory
// files builds on any platform, the one with guard pages on the
// documented platforms only (docs/building.md#guard-pages).
func TestStrayGuardPlatforms(t *testing.T) {
	for _, c := range []struct {
		target, tag, file string
	}{
		{"linux/amd64", "", "guard_pages.go"},
		{"linux/arm64", "", "guard_pages.go"},
		{"darwin/arm64", "", "guard_pages.go"},
		{"darwin/amd64", "", "guard_pages.go"},
		{"linux/amd64", "monty_boundscheck", "guard_checked.go"},
		{"darwin/arm64", "monty_boundscheck", "guard_checked.go"},
		{"windows/amd64", "", "guard_checked.go"},
		{"windows/arm64", "", "guard_checked.go"},
		{"linux/386", "", "guard_checked.go"},
		{"linux/arm", "", "guard_checked.go"},
		{"linux/riscv64", "", "guard_checked.go"},
		{"linux/ppc64le", "", "guard_checked.go"},
		{"freebsd/amd64", "", "guard_checked.go"},
	} {
		goos, goarch, _ := strings.Cut(c.target, "/")
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, goarch, false
		if c.tag != "" {
			ctx.BuildTags = []string{c.tag}
		}
		var matched []string
		for _, f := range []string{"guard_pages.go", "guard_checked.go"} {
			ok, err := ctx.MatchFile(filepath.Join("internal", "stray"), f)
			require.NoError(t, err)
			if ok {
				matched = append(matched, f)
			}
		}
		assert.Equal(t, []string{c.file}, matched, "%s %s", c.target, c.tag)
	}
}

// TestStrayMemoryFill: memory.fill, which scripts/aot.sh rewrites to store
// words when it is small, writes exactly its bytes at every size around
// the byte, word and copy paths and at unaligned addresses, up to the
// memory's end; one reaching past the end traps and writes nothing.
func TestStrayMemoryFill(t *testing.T) {
	const length = 1 << 16
	a := newStray(t, 1)
	mem := func() []byte { return *a.Mem }
	fill := func(addr uint32, b byte, n int) error {
		_, err := strayCall(a, strayFill, addr, int32(n<<8|int(b)))
		return err
	}
	pattern := func() {
		for i := range mem() {
			mem()[i] = byte(i*7 + 3)
		}
	}
	sizes := []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 127, 128, 129, 200, 4096, 8193, 20000}
	for n := 2; n < 140; n += 3 {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		for _, addr := range []uint32{0, 1, 5, 13, 64, uint32(length - n)} {
			for _, b := range []byte{0, 0xab} {
				pattern()
				require.NoError(t, fill(addr, b, n), "fill %d at %d", n, addr)
				for i, got := range mem() {
					want := byte(i*7 + 3)
					if i >= int(addr) && i < int(addr)+n {
						want = b
					}
					if got != want {
						t.Fatalf("fill of %d bytes of %#x at %d: byte %d is %#x, want %#x", n, b, addr, i, got, want)
					}
				}
			}
		}
	}
	pattern()
	before := append([]byte(nil), mem()...)
	require.NoError(t, fill(length, 0xab, 0), "an empty fill at the end")
	for _, c := range []struct {
		addr uint32
		n    int
	}{{length - 10, 20}, {length - 100, 101}, {length, 1}, {length + 1, 0}, {length - 4, 1 << 20}} {
		require.Error(t, fill(c.addr, 0xab, c.n), "fill of %d bytes at %d", c.n, c.addr)
		require.Equal(t, before, mem(), "a trapped fill of %d bytes at %d wrote", c.n, c.addr)
		a = newStray(t, 1) // a trap ends the instance
		pattern()
		before = append(before[:0], mem()...)
	}
}
