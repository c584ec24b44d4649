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
	code, err := os.ReadFile("../testdata/arith/int_edges.py")
	require.NoError(t, err)
	want, err := os.ReadFile("../testdata/arith/int_edges.cpython.txt")
	require.NoError(t, err)
	it := runtimetest.NewInterp(t)
	_, err = run(t, it, string(code))
	require.NoError(t, err)
	require.Equal(t, string(want), it.Output())
}
