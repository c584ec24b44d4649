package runtime_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
	"github.com/monty-go/monty/wasm"
)

// fakeModule assembles a wasm module with the shim's exports whose
// monty_abi_version returns abi.
func fakeModule(abi byte) []byte {
	section := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	name := func(s string, kind, index byte) []byte {
		return append(append([]byte{byte(len(s))}, s...), kind, index)
	}
	var exports []byte
	exports = append(exports, 6)
	exports = append(exports, name("monty_abi_version", 0, 0)...)
	exports = append(exports, name("monty_reserve", 0, 1)...)
	exports = append(exports, name("monty_call", 0, 2)...)
	exports = append(exports, name("monty_release", 0, 3)...)
	exports = append(exports, name("_initialize", 0, 4)...)
	exports = append(exports, name("memory", 2, 0)...)
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, 4, 0x60, 0, 1, 0x7f, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7e, 0x60, 0, 0)...)
	m = append(m, section(3, 5, 0, 1, 2, 3, 3)...)
	m = append(m, section(5, 1, 0, 1)...)
	m = append(m, section(7, exports...)...)
	m = append(m, section(10, 5,
		4, 0, 0x41, abi&0x3f, 0x0b, // monty_abi_version: i32.const abi (abi < 64)
		4, 0, 0x41, 0, 0x0b, // monty_reserve: i32.const 0
		4, 0, 0x42, 0, 0x0b, // monty_call: i64.const 0
		2, 0, 0x0b, // monty_release
		2, 0, 0x0b, // _initialize
	)...)
	return m
}

// TestEngineFromACopyOfTheModule: an engine given a copy of the module (in
// ordinary memory, unlike the embedded one whose pages are handed back to
// the kernel after compiling) leaves the caller's bytes as they were, and
// every new interpreter runs.
func TestEngineFromACopyOfTheModule(t *testing.T) {
	ctx := context.Background()
	module := append([]byte(nil), wasm.Module...)
	e, err := runtime.NewEngine(ctx, runtime.WithModule(module), runtime.WithCacheDir(t.TempDir()))
	require.NoError(t, err)
	defer e.Close(ctx)
	sum := sha256.Sum256(module)
	require.Equal(t, wasm.SHA256, hex.EncodeToString(sum[:]), "the caller's module changed")
	for range 2 {
		it, err := e.NewInterpreter(ctx)
		require.NoError(t, err)
		v, err := run(t, it, "'%s-%d' % ('abc', 1 + 1)")
		require.NoError(t, err)
		assert.Equal(t, object.Str("abc-2"), v)
		require.NoError(t, it.Close(ctx))
	}
}

// TestModuleSHA256: an engine names the module it runs, the embedded one
// or the one given to WithModule.
func TestModuleSHA256(t *testing.T) {
	ctx := context.Background()
	def, err := runtime.Default(ctx)
	require.NoError(t, err)
	assert.Equal(t, wasm.SHA256, def.ModuleSHA256())

	module := standInModule()
	e, err := runtime.NewEngine(ctx, runtime.WithModule(module), runtime.WithCacheDir(""))
	require.NoError(t, err)
	defer e.Close(ctx)
	sum := sha256.Sum256(module)
	assert.Equal(t, hex.EncodeToString(sum[:]), e.ModuleSHA256())
}

func TestEngineRefusesOtherModules(t *testing.T) {
	ctx := context.Background()
	_, err := runtime.NewEngine(ctx, runtime.WithModule(fakeModule(7)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ABI version 7")
	assert.Contains(t, err.Error(), "make wasm")

	_, err = runtime.NewEngine(ctx, runtime.WithModule([]byte("\x00asm\x01\x00\x00\x00")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a monty-go interpreter module")

	_, err = runtime.NewEngine(ctx, runtime.WithModule([]byte("not wasm at all")))
	require.Error(t, err)
}

func TestRealClockAndRandomness(t *testing.T) {
	a, b := runtimetest.NewInterp(t), runtimetest.NewInterp(t)
	code := "import random, time\n(random.random(), time.time())"
	va, err := run(t, a, code)
	require.NoError(t, err)
	vb, err := run(t, b, code)
	require.NoError(t, err)
	ta, tb := va.(object.Tuple), vb.(object.Tuple)
	assert.NotEqual(t, ta[0], tb[0], "two fresh interpreters draw different random numbers")
	now := float64(time.Now().UnixNano()) / 1e9
	assert.Less(t, math.Abs(float64(ta[1].(object.Float))-now), 5.0, "time.time() is the real wall clock")
}

func TestEngineVersion(t *testing.T) {
	e, err := runtime.Default(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "1.4.0", e.MontyVersion())
}
