package runtime_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

func TestDumpLoadProgram(t *testing.T) {
	ctx := context.Background()
	a, b := runtimetest.NewInterp(t), runtimetest.NewInterp(t)
	p, err := a.Compile(ctx, "n * 2", runtime.WithInputs("n"))
	require.NoError(t, err)
	dump, err := p.Dump(ctx)
	require.NoError(t, err)
	q, err := b.LoadProgram(ctx, dump)
	require.NoError(t, err)
	v, err := q.Run(ctx, object.Int(21))
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), v)
}

func TestDumpLoadPausedRun(t *testing.T) {
	ctx := context.Background()
	a, b := runtimetest.NewInterp(t), runtimetest.NewInterp(t)
	p, err := a.Compile(ctx, "total = 0\nfor i in range(3):\n    total += ask(i)\ntotal")
	require.NoError(t, err)
	e, err := p.Start(ctx)
	require.NoError(t, err)
	_, ok := e.Pause().(*runtime.FunctionCall)
	require.True(t, ok, "an unknown called name pauses as a function call")
	require.NoError(t, e.Resume(ctx, runtime.Return(object.Int(10)))) // ask(0)

	dump, err := e.Dump(ctx)
	require.NoError(t, err)
	moved, err := b.LoadExecution(ctx, dump)
	require.NoError(t, err)
	call, ok := moved.Pause().(*runtime.FunctionCall)
	require.True(t, ok, "pause is %T", moved.Pause())
	assert.Equal(t, []object.Value{object.Int(1)}, call.Args)
	require.NoError(t, moved.Resume(ctx, runtime.Return(object.Int(20))))
	require.NoError(t, moved.Resume(ctx, runtime.Return(object.Int(30))))
	assert.Equal(t, object.Int(60), moved.Value())

	// The original continues independently.
	require.NoError(t, e.Resume(ctx, runtime.Return(object.Int(1))))
	require.NoError(t, e.Resume(ctx, runtime.Return(object.Int(1))))
	assert.Equal(t, object.Int(12), e.Value())
}

func TestDumpLoadREPL(t *testing.T) {
	ctx := context.Background()
	a, b := runtimetest.NewInterp(t), runtimetest.NewInterp(t)
	r, err := a.NewREPL(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx, "import dataclasses\n@dataclasses.dataclass\nclass Pt:\n    x: int\n    y: int\n"+
		"def make(k):\n    def add(v):\n        return v + k\n    return add\nadd5 = make(5)\npts = [Pt(1, 2)]\nbig = 'x' * 100000")
	require.NoError(t, err)
	dump, err := r.Dump(ctx)
	require.NoError(t, err)

	r2, pending, err := b.LoadREPL(ctx, dump)
	require.NoError(t, err)
	assert.Nil(t, pending)
	v, err := r2.Run(ctx, "add5(pts[0].x + pts[0].y) + len(big)")
	require.NoError(t, err)
	assert.Equal(t, object.Int(100008), v)

	// A REPL dumped mid-feed resumes that feed after loading.
	e, err := r2.Feed(ctx, "got = ask()\ngot + 1")
	require.NoError(t, err)
	dump, err = e.Dump(ctx)
	require.NoError(t, err)
	r3, e3, err := a.LoadREPL(ctx, dump)
	require.NoError(t, err)
	require.NotNil(t, e3)
	_, ok := e3.Pause().(*runtime.FunctionCall)
	require.True(t, ok)
	require.NoError(t, e3.Resume(ctx, runtime.Return(object.Int(41))))
	assert.Equal(t, object.Int(42), e3.Value())
	v, err = r3.Run(ctx, "got")
	require.NoError(t, err)
	assert.Equal(t, object.Int(41), v)
}

// TestLoadMontyREPL: Monty's own dump bytes (what upstream's worker hands
// out, and what this package's dumps carry inside their envelope) load as
// a REPL; anything else is refused before it reaches Monty's deserialiser.
func TestLoadMontyREPL(t *testing.T) {
	ctx := context.Background()
	a, b := runtimetest.NewInterp(t), runtimetest.NewInterp(t)
	r, err := a.NewREPL(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx, "k = 40")
	require.NoError(t, err)
	dump, err := r.Dump(ctx)
	require.NoError(t, err)
	at := bytes.Index(dump, []byte(runtime.MontyDumpMagic))
	require.Positive(t, at)
	r2, pending, err := b.LoadMontyREPL(ctx, dump[at:])
	require.NoError(t, err)
	assert.Nil(t, pending)
	v, err := r2.Run(ctx, "k + 2")
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), v)

	_, _, err = b.LoadMontyREPL(ctx, dump)
	require.ErrorIs(t, err, runtime.ErrInvalidDump, "this package's envelope is not Monty's format")
	_, _, err = b.LoadMontyREPL(ctx, append([]byte(runtime.MontyDumpMagic), 0xff, 0xff, 1, 2, 3))
	require.Error(t, err, "a version no Monty writes")
	v, err = r2.Run(ctx, "k")
	require.NoError(t, err, "the interpreter survives a refused dump")
	assert.Equal(t, object.Int(40), v)
}

func TestLoadRejectsBadDumps(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx, "x = list(range(1000))")
	require.NoError(t, err)
	dump, err := r.Dump(ctx)
	require.NoError(t, err)

	cases := map[string][]byte{
		"empty":     {},
		"foreign":   []byte("PK\x03\x04 definitely a zip file"),
		"truncated": dump[:len(dump)/2],
		"header":    dump[:9],
		"extended":  append(append([]byte{}, dump...), 0),
	}
	flipped := append([]byte{}, dump...)
	flipped[len(flipped)-10] ^= 0x40
	cases["corrupted"] = flipped
	for name, b := range cases {
		_, _, err := it.LoadREPL(ctx, b)
		require.ErrorIs(t, err, runtime.ErrInvalidDump, name)
	}
	// A dump of another kind is refused too.
	_, err = it.LoadProgram(ctx, dump)
	require.ErrorIs(t, err, runtime.ErrInvalidDump)
	// Nothing of that reached the interpreter, which still works.
	_, err = r.Run(ctx, "len(x)")
	require.NoError(t, err)
}

// TestDumpAcrossProcesses dumps a REPL here and continues it in a fresh
// process (this test binary re-executed).
func TestDumpAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx, "prefix = 'hello '\ndef greet(n):\n    return prefix + n")
	require.NoError(t, err)
	dump, err := r.Dump(ctx)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "repl.dump")
	require.NoError(t, os.WriteFile(path, dump, 0o600))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MONTY_TEST_CHILD_DUMP="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "'hello child'\n", string(out))
}

func FuzzLoadREPL(f *testing.F) {
	ctx := context.Background()
	it := runtimetest.NewInterp(f)
	r, err := it.NewREPL(ctx)
	require.NoError(f, err)
	_, err = r.Run(ctx, "a = {'k': [1, 2.5, 'x']}")
	require.NoError(f, err)
	dump, err := r.Dump(ctx)
	require.NoError(f, err)
	f.Add(dump)
	f.Add(dump[:20])
	f.Add([]byte("MGOD\x01\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := it.LoadREPL(ctx, b)
		if err != nil {
			require.ErrorIs(t, err, runtime.ErrInvalidDump)
			return
		}
		r.Close()
	})
}
