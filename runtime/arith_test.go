package runtime_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/runtimetest"
)

// TestIntArithmeticEdges runs testdata/arith/int_edges.py, the integer
// operators at the edges of the module's int fast paths and past them, and
// compares what it prints with what CPython prints for it.
func TestIntArithmeticEdges(t *testing.T) {
	requirePrintsAsCPython(t, "int_edges")
}

// TestFloatReprAsCPython runs testdata/arith/float_repr.py: floats through
// repr, str, f-strings, containers and json.dumps, with the ties between two
// shortest candidates that Rust's own formatting breaks the other way, and
// json.dumps(sort_keys=True) over str keys, other keys and keys that cannot
// be compared; what it prints must be what CPython prints.
func TestFloatReprAsCPython(t *testing.T) {
	requirePrintsAsCPython(t, "float_repr")
}

// requirePrintsAsCPython runs testdata/arith/NAME.py and requires its output
// to be testdata/arith/NAME.cpython.txt, written by CPython from the same file.
func requirePrintsAsCPython(t *testing.T, name string) {
	t.Helper()
	code, err := os.ReadFile("../testdata/arith/" + name + ".py")
	require.NoError(t, err)
	want, err := os.ReadFile("../testdata/arith/" + name + ".cpython.txt")
	require.NoError(t, err)
	it := runtimetest.NewInterp(t)
	_, err = run(t, it, string(code))
	require.NoError(t, err)
	require.Equal(t, string(want), it.Output())
}
