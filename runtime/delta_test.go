package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// decodeDump decodes a REPL dump envelope's Monty payload into plain Go
// values, so two dumps compare whatever order their maps were written in.
func decodeDump(t *testing.T, dump []byte) any {
	t.Helper()
	// Envelope: magic(4) version(1) kind(1) vlen(1) version crc(4) len(4).
	payload := dump[7+int(dump[6])+8:]
	require.Equal(t, "MONTY\x00", string(payload[:6]))
	v, rest := cborValue(t, payload[8:])
	require.Empty(t, rest)
	return v
}

// cborValue decodes one CBOR item of a Monty dump: maps become Go maps
// keyed by their keys' printed form.
func cborValue(t *testing.T, b []byte) (any, []byte) {
	t.Helper()
	require.NotEmpty(t, b)
	major, info := b[0]>>5, b[0]&0x1f
	b = b[1:]
	var arg uint64
	switch {
	case info < 24:
		arg = uint64(info)
	case info <= 27:
		n := 1 << (info - 24)
		for _, x := range b[:n] {
			arg = arg<<8 | uint64(x)
		}
		b = b[n:]
	default:
		require.Equal(t, byte(31), info, "indefinite length")
		var items []any
		for b[0] != 0xff {
			var v any
			v, b = cborValue(t, b)
			items = append(items, v)
		}
		b = b[1:]
		if major == 5 {
			m := map[string]any{}
			for i := 0; i+1 < len(items); i += 2 {
				m[fmt.Sprint(items[i])] = items[i+1]
			}
			return m, b
		}
		return items, b
	}
	switch major {
	case 0, 1, 7:
		return [2]uint64{uint64(major), arg}, b
	case 2, 3:
		return string(b[:arg]), b[arg:]
	case 6:
		v, rest := cborValue(t, b)
		return [2]any{arg, v}, rest
	case 4:
		items := make([]any, arg)
		for i := range items {
			items[i], b = cborValue(t, b)
		}
		return items, b
	}
	m := map[string]any{}
	for range arg {
		var k, v any
		k, b = cborValue(t, b)
		v, b = cborValue(t, b)
		m[fmt.Sprint(k)] = v
	}
	return m, b
}

func defaultEngine(t *testing.T) *runtime.Engine {
	t.Helper()
	e, err := runtime.Default(context.Background())
	require.NoError(t, err)
	return e
}

func snippet(i int) string {
	return fmt.Sprintf("def f%d(x):\n    return x * %d + len(str(x))\nv%d = f%d(%d)\ns%d = 'text %d'\nb%d = b'bytes %d'\nn%d = 10**30 + %d\nv%d", i, i, i, i, i, i, i, i, i, i, i, i)
}

// A lineage of deltas joins into the dump the REPL gives whole, and the
// joined dump loads and continues.
func TestDumpDeltaJoinsIntoTheWholeDump(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	eng := defaultEngine(t)
	repl, err := it.NewREPL(ctx)
	require.NoError(t, err)
	var added [][]byte
	var marks runtime.DumpMarks
	var state []byte
	for i := range 12 {
		_, err := repl.Run(ctx, snippet(i))
		require.NoError(t, err)
		d, err := repl.DumpDelta(ctx, marks)
		require.NoError(t, err)
		assert.Greater(t, d.Marks.Functions, marks.Functions, "snippet %d defines a function", i)
		assert.Equal(t, marks.Inputs+1, d.Marks.Inputs)
		added, marks, state = append(added, d.Added), d.Marks, d.State
		if i%4 == 3 {
			joined, err := eng.JoinDump(added, state)
			require.NoError(t, err)
			whole, err := repl.Dump(ctx)
			require.NoError(t, err)
			assert.Equal(t, decodeDump(t, whole), decodeDump(t, joined), "after snippet %d", i)
		}
	}
	// Merged neighbours stand for both.
	merged, err := runtime.MergeAdded(added[:6]...)
	require.NoError(t, err)
	a, err := eng.JoinDump(added, state)
	require.NoError(t, err)
	b, err := eng.JoinDump(append([][]byte{merged}, added[6:]...), state)
	require.NoError(t, err)
	assert.Equal(t, decodeDump(t, a), decodeDump(t, b))

	// The joined dump is a REPL: its functions and values are there, and a
	// delta continued from the last marks extends it.
	other := runtimetest.NewInterp(t)
	loaded, paused, err := other.LoadREPL(ctx, a)
	require.NoError(t, err)
	require.Nil(t, paused)
	v, err := loaded.Run(ctx, "f3(2) + v11 + len(s5) + len(b7) + n2")
	require.NoError(t, err)
	assert.Equal(t, "1000000000000000000000000000145", object.Repr(v)) // 7 + 123 + 6 + 7 + 10**30 + 2
	_, err = loaded.Run(ctx, "def g(): return 'new'\nw = g()")
	require.NoError(t, err)
	d, err := loaded.DumpDelta(ctx, marks)
	require.NoError(t, err)
	joined, err := eng.JoinDump(append(added, d.Added), d.State)
	require.NoError(t, err)
	whole, err := loaded.Dump(ctx)
	require.NoError(t, err)
	assert.Equal(t, decodeDump(t, whole), decodeDump(t, joined))
}

// Zero marks give everything: one delta is the whole dump.
func TestDumpDeltaFromZeroIsWhole(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	repl, err := it.NewREPL(ctx)
	require.NoError(t, err)
	for i := range 3 {
		_, err := repl.Run(ctx, snippet(i))
		require.NoError(t, err)
	}
	d, err := repl.DumpDelta(ctx, runtime.DumpMarks{})
	require.NoError(t, err)
	joined, err := defaultEngine(t).JoinDump([][]byte{d.Added}, d.State)
	require.NoError(t, err)
	whole, err := repl.Dump(ctx)
	require.NoError(t, err)
	assert.Equal(t, decodeDump(t, whole), decodeDump(t, joined))
	// Nothing new since: the next delta adds nothing.
	again, err := repl.DumpDelta(ctx, d.Marks)
	require.NoError(t, err)
	assert.Equal(t, d.Marks, again.Marks)
	assert.Less(t, len(again.Added), 16)
}

func TestJoinDumpRefusesDamage(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	eng := defaultEngine(t)
	repl, err := it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = repl.Run(ctx, snippet(1))
	require.NoError(t, err)
	d, err := repl.DumpDelta(ctx, runtime.DumpMarks{})
	require.NoError(t, err)
	for name, c := range map[string]struct{ added, state []byte }{
		"added not framed":    {[]byte("junk"), d.State},
		"added truncated":     {d.Added[:len(d.Added)-3], d.State},
		"added with trailing": {append(append([]byte{}, d.Added...), 0), d.State},
		"state truncated":     {d.Added, d.State[:len(d.State)/2]},
		"state not a dump":    {d.Added, []byte("MONTY\x00\x0e\x00\xa0")},
		"state foreign":       {d.Added, []byte("not a dump at all")},
		"state empty":         {d.Added, nil},
	} {
		_, err := eng.JoinDump([][]byte{c.added}, c.state)
		assert.ErrorIs(t, err, runtime.ErrInvalidDump, name)
	}
	_, err = runtime.MergeAdded(d.Added, []byte{9})
	assert.ErrorIs(t, err, runtime.ErrInvalidDump)
}

func TestDumpDeltaOfAPausedREPL(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	repl, err := it.NewREPL(ctx)
	require.NoError(t, err)
	exec, err := repl.Feed(ctx, "x = ask()")
	require.NoError(t, err)
	defer exec.Close(ctx)
	_, err = repl.DumpDelta(ctx, runtime.DumpMarks{})
	assert.ErrorIs(t, err, runtime.ErrBadState)
	_, err = repl.GlobalMarks(ctx, false)
	assert.ErrorIs(t, err, runtime.ErrBadState)
}

func TestGlobalMarks(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	repl, err := it.NewREPL(ctx)
	require.NoError(t, err)
	marks := func(reset bool) map[string]runtime.GlobalMark {
		t.Helper()
		list, err := repl.GlobalMarks(ctx, reset)
		require.NoError(t, err)
		out := map[string]runtime.GlobalMark{}
		for _, m := range list {
			out[m.Name] = m
		}
		return out
	}
	_, err = repl.Run(ctx, `import json
class C: pass
def f(): pass
g = lambda: 1
i = 7
big = 10**40
fl = 1.5
s = 'interned'
t = 'x' * 3
none = None
flag = True
l = [1]
_private = 1`)
	require.NoError(t, err)
	first := marks(false) // a REPL's first call lists everything
	assert.Len(t, first, 12)
	assert.NotContains(t, first, "_private")
	for _, name := range []string{"json", "C", "f", "g"} {
		assert.Equal(t, uint8(runtime.GlobalCode), first[name].Tag, name)
	}
	for _, name := range []string{"big", "l", "t"} {
		assert.Equal(t, uint8(runtime.GlobalHeap), first[name].Tag, name)
	}
	for _, name := range []string{"i", "fl", "s", "none", "flag"} {
		assert.NotContains(t, []uint8{runtime.GlobalCode, runtime.GlobalHeap, runtime.GlobalGone}, first[name].Tag, name)
	}
	// Then only what changed, and what is on the heap.
	assert.Equal(t, []string{"big", "l", "t"}, keys(marks(false)))
	_, err = repl.Run(ctx, "i = 8\nfl = 1.5\nl.append(2)\nf = 3\nnew = 1")
	require.NoError(t, err)
	changed := marks(false)
	assert.Equal(t, []string{"big", "f", "i", "l", "new", "t"}, keys(changed))
	assert.NotEqual(t, first["i"], changed["i"])
	assert.Equal(t, first["i"].Slot, changed["i"].Slot)
	assert.Equal(t, first["f"].Slot, changed["f"].Slot)
	// A reset lists everything again, in the order locals() has.
	list, err := repl.GlobalMarks(ctx, true)
	require.NoError(t, err)
	assert.Len(t, list, 13)
	v, err := repl.Run(ctx, "[k for k in locals() if not k.startswith('_')]")
	require.NoError(t, err)
	var names object.List
	for i, m := range list {
		names = append(names, object.Str(m.Name))
		if i > 0 {
			assert.Greater(t, m.Slot, list[i-1].Slot)
		}
	}
	assert.Equal(t, v, names)
}

func keys(m map[string]runtime.GlobalMark) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
