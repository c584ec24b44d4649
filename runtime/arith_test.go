package runtime_test

import "testing"

// TestIntArithmeticEdges runs testdata/arith/int_edges.py, the integer
// operators at the edges of the module's int fast paths and past them, and
// compares what it prints with what CPython prints for it.
func TestIntArithmeticEdges(t *testing.T) {
	requirePrintsAsCPython(t, "arith/int_edges")
}
