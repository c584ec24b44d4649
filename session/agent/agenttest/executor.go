package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// Weather is what get_weather returns; Python sees a dict.
type Weather struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
	Units string  `json:"units"`
}

// Functions is a registry for the tests of the tool surface (agent,
// tools, mcpclient), with sync, async, failing and typed functions:
// get_weather, add, fetch (async), lookup (raises KeyError, or a typed
// exception, or panics) and wait_ms.
func Functions(t testing.TB) *tools.Registry {
	t.Helper()
	weather := tools.MustFunc(tools.Schema{
		Name: "get_weather", Description: "Current weather for a city.\nData is made up.", Category: "data",
		Params: []tools.Param{
			{Name: "city", Description: "city name"},
			{Name: "units", Description: "metric or imperial", Default: "metric"},
		},
		Returns: "a dict with city, temp_c and units",
	}, func(ctx context.Context, city, units string) (Weather, error) {
		if city == "" {
			return Weather{}, errors.New("city is empty")
		}
		return Weather{City: city, TempC: 21.5, Units: units}, nil
	})
	add := tools.MustFunc(tools.Schema{
		Name: "add", Description: "Add two integers.", Category: "math",
		Params: []tools.Param{{Name: "a"}, {Name: "b", Optional: true}},
	}, func(a, b int) int { return a + b })
	fetch := tools.MustFunc(tools.Schema{
		Name: "fetch", Description: "Fetch a document after a delay.", Category: "data",
		Params: []tools.Param{{Name: "key"}, {Name: "delay_ms", Default: 100}},
	}, func(ctx context.Context, key string, delayMs int) (string, error) {
		select {
		case <-time.After(time.Duration(delayMs) * time.Millisecond):
			return "doc:" + key, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	fetch.Async = true
	wait := tools.MustFunc(tools.Schema{
		Name: "wait_ms", Description: "Block for a while.", Category: "time",
		Params: []tools.Param{{Name: "ms"}},
	}, func(ctx context.Context, ms int) (int, error) {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return ms, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	lookup := tools.MustFunc(tools.Schema{
		Name: "lookup", Description: "Look a key up.", Category: "data",
		Params: []tools.Param{{Name: "key"}},
	}, func(key string) (string, error) {
		switch key {
		case "panic":
			panic("boom")
		case "typed":
			return "", fmt.Errorf("wrapped: %w", &runtime.Exception{Type: "PermissionError", Message: "no access"})
		}
		return "", fmt.Errorf("no such key %q", key)
	})
	lookup.ErrorType = "KeyError"
	reg, err := tools.NewRegistry(weather, add, fetch, lookup, wait)
	require.NoError(t, err)
	return reg
}

// NewExecutor makes an executor for tests of everything but the call
// results in the text (TestExecutorCallResults), which it omits so that
// the texts asserted are what the code printed.
func NewExecutor(t testing.TB, opts agent.ExecutorOptions) *agent.Executor {
	t.Helper()
	opts.OmitCallResults = true
	return NewExecutorWith(t, opts)
}

// NewExecutorWith makes an executor with opts, in a memory store and
// with Functions and a keeper of its own (closed when the test ends)
// unless opts say otherwise.
func NewExecutorWith(t testing.TB, opts agent.ExecutorOptions) *agent.Executor {
	t.Helper()
	if opts.Session.Store == nil && opts.Keeper != nil {
		opts.Session.Store = opts.Keeper.Store()
	}
	if opts.Session.Store == nil {
		opts.Session.Store = memstore.New(memstore.Options{})
	}
	if opts.Functions == nil {
		opts.Functions = Functions(t)
	}
	e, err := newExecutor(t, opts)
	require.NoError(t, err)
	return e
}

// CodeArgs is execute_python's arguments for code.
func CodeArgs(code string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"code": code})
	return b
}

// Execute runs code on thread and requires the call to run.
func Execute(t testing.TB, e *agent.Executor, thread, code string) *agent.Result {
	t.Helper()
	res, err := e.Execute(context.Background(), thread, CodeArgs(code))
	require.NoError(t, err)
	return res
}

// OK runs code that must succeed and returns the model's text.
func OK(t testing.TB, e *agent.Executor, thread, code string) string {
	t.Helper()
	res := Execute(t, e, thread, code)
	require.NoError(t, res.Err, res.Text)
	return res.Text
}

// OpenSession opens a plain session whose host is the registry's.
func OpenSession(t testing.TB, reg *tools.Registry) *session.Session {
	t.Helper()
	s, err := session.Open(context.Background(), "plain", session.Options{Store: memstore.New(memstore.Options{}), Host: reg.Host()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}
