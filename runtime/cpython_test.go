package runtime_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/runtimetest"
)

// TestFloatReprAsCPython runs testdata/cpython/float_repr.py: floats through
// repr, str, f-strings, containers and json.dumps, with the ties between two
// shortest candidates that Rust's own formatting breaks the other way, and
// json.dumps(sort_keys=True) over str keys, other keys and keys that cannot
// be compared.
func TestFloatReprAsCPython(t *testing.T) {
	requirePrintsAsCPython(t, "cpython/float_repr")
}

// TestJSONStringsAsCPython runs testdata/cpython/json_strings.py: strings
// with an escape at every place of an 8-byte word through json.dumps (with
// and without ensure_ascii) and back, and json.loads of objects whose keys
// repeat across documents and calls, at the string cache's length bounds,
// escaped, non-ASCII, duplicated, and cut off mid-object.
func TestJSONStringsAsCPython(t *testing.T) {
	requirePrintsAsCPython(t, "cpython/json_strings")
}

// TestJSONShapesAsCPython runs testdata/cpython/json_shapes.py: json.loads
// of objects whose sizes change at the same depth and deeper than the
// decoder remembers sizes for (each dict starts with the capacity of the
// last object at its depth), with duplicate keys, grown and shrunk after;
// and json.dumps(sort_keys=True) over many str keys, in code point order
// across the planes, and over keys of other types.
func TestJSONShapesAsCPython(t *testing.T) {
	requirePrintsAsCPython(t, "cpython/json_shapes")
}

// TestStrSeparatorsAsCPython runs testdata/cpython/str_separators.py:
// str.partition and rpartition with separators of one byte and longer, in
// ASCII and non-ASCII text, and their errors; isspace, split and strip over
// every ASCII character and Unicode's spaces (the paths parse_strings times,
// and a fast path for them was measured: docs/performance.md).
func TestStrSeparatorsAsCPython(t *testing.T) {
	requirePrintsAsCPython(t, "cpython/str_separators")
}

// requirePrintsAsCPython runs testdata/NAME.py and requires its output to be
// testdata/NAME.cpython.txt, written by CPython from the same file.
func requirePrintsAsCPython(t *testing.T, name string) {
	t.Helper()
	code, err := os.ReadFile("../testdata/" + name + ".py")
	require.NoError(t, err)
	want, err := os.ReadFile("../testdata/" + name + ".cpython.txt")
	require.NoError(t, err)
	it := runtimetest.NewInterp(t)
	_, err = run(t, it, string(code))
	require.NoError(t, err)
	require.Equal(t, string(want), it.Output())
}
