package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestTypeCheckedSession: a checked session refuses code with problems
// (nothing runs, the state is unchanged) and checks each call against what
// the earlier ones defined, also after the session moved to another
// process (reopened from the store).
func TestTypeCheckedSession(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	tc := &session.TypeCheck{Stubs: "def lookup(key: str) -> int: ...\n", Format: typecheck.Concise}
	opts := session.Options{Store: st, TypeCheck: tc, Host: &runtime.Host{Functions: map[string]runtime.Function{
		"lookup": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) { return object.Int(7), nil }},
	}}}
	s := open(t, "checked", opts)
	exec(t, s, "import math\ndef area(r: float) -> float:\n    return math.pi * r * r\ncount = lookup('a')\n")
	before := exec(t, s, "count + 1")
	assert.Equal(t, object.Int(8), before.Value)

	res, err := s.Exec(ctx, "count = 99\narea('wide')\n")
	require.ErrorIs(t, err, typecheck.ErrTypeErrors)
	assert.Nil(t, res)
	var tcErr *typecheck.Error
	require.ErrorAs(t, err, &tcErr)
	assert.Equal(t, "main.py:2:6: error[invalid-argument-type] Argument to function `area` is incorrect: Expected `float`, found `Literal[\"wide\"]`\n", tcErr.Result.Text)
	assert.Equal(t, object.Int(8), exec(t, s, "count + 1").Value, "nothing of the refused call ran")

	_, err = s.Exec(ctx, "lookup(1)\n")
	require.ErrorIs(t, err, typecheck.ErrTypeErrors, "host function stubs are checked")

	// Another process: the context comes with the stored state.
	s2 := open(t, "checked", opts)
	_, err = s2.Exec(ctx, "math.sqrt(area(2.0)).upper()\n")
	require.ErrorIs(t, err, typecheck.ErrTypeErrors)
	require.ErrorAs(t, err, &tcErr)
	assert.Equal(t, "unresolved-attribute", tcErr.Result.Diagnostics[0].Rule)
	assert.Equal(t, object.Int(3), exec(t, s2, "round(math.sqrt(9.0))").Value)
}

// TestCheckAdoptsAnUncheckedSession: globals made before type checking was
// turned on are declared Any, so using them is not an error; a call made
// without checking on a recording session is still recorded.
func TestCheckAdoptsAnUncheckedSession(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := open(t, "mixed", session.Options{Store: st})
	exec(t, s, "data = {'a': 1}\ndef helper(x):\n    return x\n")
	res, err := s.Check(ctx, "print(helper(data['a']))\nundefined_name\n", session.TypeCheck{})
	require.NoError(t, err)
	require.Len(t, res.Diagnostics, 1, res.Text)
	assert.Equal(t, "unresolved-reference", res.Diagnostics[0].Rule)
	assert.Equal(t, 2, res.Diagnostics[0].Line)

	// Recording now: an unchecked call's definitions and imports count.
	exec(t, s, "import json\ndef typed(n: int) -> str:\n    return str(n)\n")
	_, err = s.ExecOptions(ctx, "typed('x')\n", session.ExecOptions{TypeCheck: &session.TypeCheck{}})
	require.ErrorIs(t, err, typecheck.ErrTypeErrors)
	r, err := s.ExecOptions(ctx, "json.dumps(typed(3))", session.ExecOptions{TypeCheck: &session.TypeCheck{}})
	require.NoError(t, err)
	assert.Equal(t, object.Str(`"3"`), r.Value)
}

// TestCheckedInputs: inputs are declared with their types.
func TestCheckedInputs(t *testing.T) {
	ctx := context.Background()
	s := open(t, "inputs", session.Options{Store: memstore.New(memstore.Options{})})
	tc := &session.TypeCheck{}
	in := []runtime.Input{{Name: "n", Value: object.Int(2)}}
	_, err := s.ExecOptions(ctx, "n.upper()", session.ExecOptions{Inputs: in, TypeCheck: tc})
	require.ErrorIs(t, err, typecheck.ErrTypeErrors)
	r, err := s.ExecOptions(ctx, "n * 21", session.ExecOptions{Inputs: in, TypeCheck: tc})
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), r.Value)
}

// TestCheckLimits: a check runs under the session's limits.
func TestCheckLimits(t *testing.T) {
	ctx := context.Background()
	s := open(t, "limited", session.Options{Store: memstore.New(memstore.Options{}), Limits: runtime.Limits{MaxDuration: 1}})
	_, err := s.Check(ctx, "x = 1\n", session.TypeCheck{})
	require.ErrorIs(t, err, runtime.ErrTimeLimit)
}

// TestCheckerCrashLeavesTheSessionWorking: code that crashes the checker
// (ty recursing deeper than the module's stack on a 20,000-term
// expression) is a typed error; the session's interpreter is untouched.
func TestCheckerCrashLeavesTheSessionWorking(t *testing.T) {
	ctx := context.Background()
	s := open(t, "crash", session.Options{Store: memstore.New(memstore.Options{})})
	exec(t, s, "kept = 41")
	code := "x = " + strings.Repeat("1 + ", 20000) + "1\n"
	_, err := s.ExecOptions(ctx, code, session.ExecOptions{TypeCheck: &session.TypeCheck{}})
	require.ErrorIs(t, err, typecheck.ErrCheckerFailed)
	assert.Contains(t, err.Error(), "stack overflow")
	assert.Equal(t, object.Int(42), exec(t, s, "kept + 1").Value)
	res, err := s.Check(ctx, "print(kept)\n", session.TypeCheck{})
	require.NoError(t, err)
	assert.True(t, res.Clean(), res.Text)
}

// TestBlobTypeCheckSection: the type check context a session records is
// stored in its section (format version 5, the dump in parts), which is
// verified like the rest.
func TestBlobTypeCheckSection(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := open(t, "versions", session.Options{Store: st})
	exec(t, s, "a = 1")
	obj, err := st.Get(ctx, "versions")
	require.NoError(t, err)
	assert.Equal(t, byte(5), obj.Data[4])
	assert.NotContains(t, string(obj.Data), `{"code":`)

	_, err = s.ExecOptions(ctx, "b = a + 1", session.ExecOptions{TypeCheck: &session.TypeCheck{}})
	require.NoError(t, err)
	obj, err = st.Get(ctx, "versions")
	require.NoError(t, err)
	assert.Equal(t, byte(5), obj.Data[4])
	assert.Contains(t, string(obj.Data), `{"code":`)
	info, err := session.Inspect(obj.Data, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, info.Globals)

	// Forged blobs with valid checksums: a version 5 blob claiming
	// version 1 (sections too many), a context that is not the object.
	reseal := func(content []byte) []byte {
		sum := sha256.Sum256(content)
		return append(content, sum[:]...)
	}
	content := append([]byte(nil), obj.Data[:len(obj.Data)-32]...)
	asV1 := append([]byte(nil), content...)
	asV1[4] = 1
	_, err = session.Inspect(reseal(asV1), nil)
	require.ErrorIs(t, err, session.ErrCorrupt)
	i := bytes.LastIndex(content, []byte(`{"code":`))
	require.Positive(t, i)
	badContext := append([]byte(nil), content...)
	badContext[i] = '['
	_, err = session.Inspect(reseal(badContext), nil)
	require.ErrorIs(t, err, session.ErrCorrupt)
	assert.Contains(t, err.Error(), "type check context")
}
