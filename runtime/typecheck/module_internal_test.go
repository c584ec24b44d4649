package typecheck

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Without checker.wasm linked (runtime/typecheck/embedded not imported, or
// built with monty_checker_noembed), a check that needs it says what to
// import, and the Checker tries again once it is there.
func TestNoModuleLinked(t *testing.T) {
	saved := registeredModule.Load()
	require.NotNil(t, saved, "the tests link checker.wasm (checker_module_test.go)")
	registeredModule.Store(nil)
	defer registeredModule.Store(saved)

	c := Lazy(WithWazero(), WithCacheDir(""))
	defer c.Close(context.Background())
	_, err := c.Check(context.Background(), Request{Code: "x = 1\n"})
	require.ErrorIs(t, err, ErrNoModule)
	require.ErrorContains(t, err, "github.com/monty-go/monty/runtime/typecheck/embedded")

	RegisterModule(nil) // an empty module, as monty_checker_noembed registers
	_, err = c.Check(context.Background(), Request{Code: "x = 1\n"})
	require.ErrorIs(t, err, ErrNoModule)

	RegisterModule(*saved)
	res, err := c.Check(context.Background(), Request{Code: "x = 1\n"})
	require.NoError(t, err)
	require.True(t, res.Clean())
}
