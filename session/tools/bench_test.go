package tools_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/tools"
)

// The cost of one round trip to the host from Python, three ways: a host
// function call, an attribute read on a host object and the same call as
// a method of the object. Each iteration makes 100 of them in one run; report them as ratios
// of BenchmarkHostFunctionCall in the same run (the target: a host object
// within 2x of a host function).
func BenchmarkHostFunctionCall(b *testing.B) {
	benchHostCalls(b, "for _ in range(100):\n    deposit(1.0)")
}

func BenchmarkHostObjectAttr(b *testing.B) {
	benchHostCalls(b, "for _ in range(100):\n    acct.balance")
}

func BenchmarkHostObjectMethod(b *testing.B) {
	benchHostCalls(b, "for _ in range(100):\n    acct.deposit(1.0)")
}

func benchHostCalls(b *testing.B, code string) {
	ctx := context.Background()
	acct := &account{ID: "a-1", Balance: 1}
	reg := accountRegistry(b)
	// The same work as the method, as a function.
	require.NoError(b, reg.Register(tools.MustFunc(tools.Schema{Name: "deposit", Params: []tools.Param{{Name: "amount"}}}, acct.Deposit)))
	obj, err := reg.Object(acct)
	require.NoError(b, err)
	host := reg.Host()
	e, err := runtime.Default(ctx)
	require.NoError(b, err)
	it, err := e.NewInterpreter(ctx)
	require.NoError(b, err)
	defer it.Close(ctx)
	it.SetLimits(runtime.Limits{MaxHostCalls: runtime.Unlimited})
	r, err := it.NewREPL(ctx)
	require.NoError(b, err)
	_, err = host.Feed(ctx, r, "pass", runtime.Input{Name: "acct", Value: obj})
	require.NoError(b, err)
	b.ResetTimer()
	for range b.N {
		if _, err := host.Feed(ctx, r, code); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/hostcall")
}
