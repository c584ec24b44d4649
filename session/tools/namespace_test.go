package tools_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/tools"
)

// A namespace is a global object whose methods are its operations; its
// name is checked like any other, and a method that waits for approval is
// found by Approval and not called by the code.
func TestNamespace(t *testing.T) {
	calls := 0
	op := func(name string, approval bool) tools.Function {
		return tools.Function{
			Schema:   tools.Schema{Name: name, Params: []tools.Param{{Name: "x", Type: tools.Integer}}},
			Approval: approval,
			Handler: func(_ context.Context, a tools.Args) (object.Value, error) {
				calls++
				return a["x"], nil
			},
		}
	}
	class := &tools.Class{Name: "svc", Description: "A service.", Methods: []tools.Function{op("get", false), op("drop", true)}}
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	for _, bad := range []string{"a-b", "_x", "class", "", "help"} {
		require.ErrorIs(t, reg.AddNamespace(bad, class, nil), tools.ErrInvalidFunction, bad)
	}
	require.ErrorIs(t, reg.ReplaceNamespace("svc", class, nil), tools.ErrInvalidFunction, "no such namespace yet")
	require.NoError(t, reg.AddNamespace("svc", class, nil))
	assert.True(t, reg.Taken("svc"))
	require.ErrorIs(t, reg.AddNamespace("svc", class, nil), tools.ErrInvalidFunction, "taken")

	s := agenttest.OpenSession(t, reg)
	res, err := s.Exec(context.Background(), "svc.get(x=4)")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, object.Int(4), res.Value)

	_, err = s.Exec(context.Background(), "svc.drop(x=5)")
	require.NoError(t, err)
	p := s.Paused()
	require.NotNil(t, p, "a call that waits for approval pauses the run")
	require.Len(t, p.Calls, 1)
	c := p.Calls[0]
	require.NotNil(t, c.Object)
	assert.Equal(t, 1, calls, "the paused call was not made")
	name, call, ok := reg.Approval(*c.Object, c.Name)
	require.True(t, ok)
	assert.Equal(t, "svc.drop", name)
	v, err := call(context.Background(), c.Args, c.Kwargs)
	require.NoError(t, err)
	assert.Equal(t, object.Int(5), v)
	_, _, ok = reg.Approval(*c.Object, "get")
	assert.False(t, ok, "a method that does not wait for approval")
}
