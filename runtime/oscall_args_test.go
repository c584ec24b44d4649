package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// An OS function's parameter arrives positionally or by keyword; Str
// takes a str or a Path and says what is wrong otherwise.
func TestOSCallArgs(t *testing.T) {
	call := &runtime.OSCall{Name: "Path.rename", Args: []object.Value{object.Path("/a")},
		Kwargs: []object.Pair{{Key: object.Str("target"), Value: object.Str("/b")}, {Key: object.Str("mode"), Value: object.Int(3)}}}
	v, ok := call.Arg(0, "path")
	require.True(t, ok)
	assert.Equal(t, object.Path("/a"), v)
	v, ok = call.Arg(1, "target")
	require.True(t, ok, "by keyword")
	assert.Equal(t, object.Str("/b"), v)
	_, ok = call.Arg(2, "missing")
	assert.False(t, ok)

	s, err := call.Str(0, "path")
	require.NoError(t, err)
	assert.Equal(t, "/a", s)
	s, err = call.Str(1, "target")
	require.NoError(t, err)
	assert.Equal(t, "/b", s)
	_, err = call.Str(5, "mode")
	assert.ErrorContains(t, err, "argument mode is int, not str")
	_, err = call.Str(5, "dst")
	assert.ErrorContains(t, err, "Path.rename: missing argument dst")
}
