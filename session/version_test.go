package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/wasm"
)

// TestOtherMontyVersionFallsBackToJSON stores a session, rewrites its blob
// as if another Monty version had written it, and checks that reopening
// restores the JSON view and names what was lost.
func TestOtherMontyVersionFallsBackToJSON(t *testing.T) {
	ctx := context.Background()
	key := []byte("k")
	st := memstore.New(memstore.Options{})
	s, err := Open(ctx, "old", Options{Store: st, SigningKey: key})
	require.NoError(t, err)
	_, err = s.Exec(ctx, "data = {'a': [1, 2.5, None]}\nname = 'x'\ndef f():\n    return 1\nclass K:\n    pass\n_private = 3")
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))

	obj, err := st.Get(ctx, "old")
	require.NoError(t, err)
	b, err := decodeBlob(obj.Data, [][]byte{key}, 0)
	require.NoError(t, err)
	assert.Equal(t, wasm.SHA256, hex.EncodeToString(b.ModuleSum[:]), "stamped with the embedded module")
	b.MontyVersion = "0.0.1"
	data, err := b.encode(key, true)
	require.NoError(t, err)
	_, err = st.Put(ctx, "old", data, store.Cond{IfVersion: obj.Info.Version})
	require.NoError(t, err)

	s, err = Open(ctx, "old", Options{Store: st, SigningKey: key})
	require.NoError(t, err)
	defer s.Close(ctx)
	r := s.Restored()
	assert.True(t, r.Found)
	assert.True(t, r.FromJSON)
	assert.Contains(t, r.Reason, "Monty 0.0.1")
	assert.ElementsMatch(t, []string{"f", "K"}, r.Lost)
	res, err := s.Exec(ctx, "print(data['a'][1], name)\ntry:\n    f()\nexcept NameError:\n    print('no f')")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, "2.5 x\nno f\n", res.Output)
}

// otherModuleEnv marks the process TestStampNamesTheModuleThatRan runs in.
const otherModuleEnv = "MONTY_SESSION_TEST_OTHER_MODULE"

// TestStampNamesTheModuleThatRan: a state saved by a session whose engine
// runs another module than the embedded one (runtime.WithModule) is
// stamped with that module's SHA-256 (docs/state-format.md), whether a
// call, a file change or the file operations on the stored state wrote it.
//
// The other module is the embedded one with a custom section appended: it
// runs the same, and hashes differently. Its engine starts on wazero's
// interpreter engine (a fast start) and would compile machine code in the
// background for minutes, so the test runs in a process of its own, which
// ends first.
func TestStampNamesTheModuleThatRan(t *testing.T) {
	if os.Getenv(otherModuleEnv) == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestStampNamesTheModuleThatRan$", "-test.v")
		cmd.Env = append(os.Environ(), otherModuleEnv+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestStampNamesTheModuleThatRan", "%s", out)
		return
	}
	ctx := context.Background()
	name, payload := "monty-go-test", "another build of the same interpreter"
	custom := append(append([]byte{byte(len(name))}, name...), payload...)
	module := append(append(slices.Clone(wasm.Module), 0, byte(len(custom))), custom...)
	want := sha256.Sum256(module)
	require.NotEqual(t, sha256.Sum256(wasm.Module), want)
	e, err := runtime.NewEngine(ctx, runtime.WithModule(module), runtime.WithFastStart(), runtime.WithCacheDir(""))
	require.NoError(t, err)
	defer e.Close(ctx)

	st := memstore.New(memstore.Options{})
	stamp := func(id string) [32]byte {
		t.Helper()
		obj, err := st.Get(ctx, id)
		require.NoError(t, err)
		b, err := decodeBlob(obj.Data, nil, 0)
		require.NoError(t, err)
		return b.ModuleSum
	}
	opts := Options{Store: st, Engine: e, Files: &Files{}}
	s, err := Open(ctx, "call", opts)
	require.NoError(t, err)
	defer s.Close(ctx)
	res, err := s.Exec(ctx, "x = 41 + 1")
	require.NoError(t, err)
	require.True(t, res.Saved)
	assert.Equal(t, want, stamp("call"), "a call")

	s2, err := Open(ctx, "file", opts)
	require.NoError(t, err)
	defer s2.Close(ctx)
	_, err = s2.WriteFile(ctx, "a.txt", []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, want, stamp("file"), "a file change of a session with no state")

	_, err = WriteFile(ctx, "stored", "a.txt", []byte("a"), opts)
	require.NoError(t, err)
	assert.Equal(t, want, stamp("stored"), "a file written to a session with no state")
}
