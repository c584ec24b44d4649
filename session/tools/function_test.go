package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/tools"
)

func TestHostFunctionCalls(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	for code, want := range map[string]string{
		"get_weather('Oslo')":                        "{'city': 'Oslo', 'temp_c': 21.5, 'units': 'metric'}",
		"get_weather('Oslo', 'imperial')['units']":   "'imperial'",
		"get_weather(units='imperial', city='Rome')": "{'city': 'Rome', 'temp_c': 21.5, 'units': 'imperial'}",
		"get_weather('Oslo', units=None)['units']":   "'metric'",
		"add(2, 3)":      "5",
		"add(2)":         "2",
		"add(a=2, b=40)": "42",
		"try:\n    lookup('x')\nexcept KeyError as e:\n    r = repr(e)\nr": `'KeyError(\'no such key "x"\')'`,
	} {
		assert.Equal(t, want, agenttest.OK(t, e, "calls", code), code)
	}
}

func TestHostFunctionErrors(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	for code, want := range map[string]string{
		"get_weather(1)":              "TypeError: get_weather() argument 'city' must be str, not int",
		"get_weather()":               "TypeError: get_weather() missing 1 required argument(s): 'city'",
		"get_weather('a', 'b', 'c')":  "TypeError: get_weather() takes 2 positional arguments but 3 were given",
		"get_weather('a', town='b')":  "TypeError: get_weather() got an unexpected keyword argument 'town'",
		"get_weather('a', city='b')":  "TypeError: get_weather() got multiple values for argument 'city'",
		"add(1.5, 2)":                 "TypeError: add() argument 'a' must be int, not float",
		"add(True, 2)":                "TypeError: add() argument 'a' must be int, not bool",
		"add(2**70, 1)":               "TypeError: add() argument 'a': 1180591620717411303424 is out of range",
		"get_weather('')":             "RuntimeError: city is empty",
		"lookup('x')":                 `KeyError: no such key "x"`,
		"lookup('typed')":             "PermissionError: no access",
		"lookup('panic')":             "RuntimeError: host function lookup panicked: boom",
		"get_weather('Oslo')['nope']": "KeyError",
	} {
		res := agenttest.Execute(t, e, "errors", code)
		require.Error(t, res.Err, code)
		assert.Contains(t, res.Text, want, code)
		assert.Contains(t, res.Text, "Traceback", code)
	}
	// Errors are ordinary exceptions: try/except catches them and the
	// session goes on.
	assert.Equal(t, "'TypeError'", agenttest.OK(t, e, "errors", "try:\n    add('x', 1)\nexcept TypeError as e:\n    r = type(e).__name__\nr"))
	assert.Equal(t, "'RuntimeError'", agenttest.OK(t, e, "errors", "try:\n    get_weather('')\nexcept RuntimeError as e:\n    r = type(e).__name__\nr"))
}

func TestFuncInvalid(t *testing.T) {
	p := []tools.Param{{Name: "a"}}
	for name, build := range map[string]func() (tools.Function, error){
		"not a func": func() (tools.Function, error) { return tools.Func(tools.Schema{Name: "f"}, 42) },
		"nil func":   func() (tools.Function, error) { return tools.Func(tools.Schema{Name: "f"}, (func())(nil)) },
		"variadic": func() (tools.Function, error) {
			return tools.Func(tools.Schema{Name: "f", Params: p}, func(a ...int) {})
		},
		"count": func() (tools.Function, error) { return tools.Func(tools.Schema{Name: "f"}, func(a int) {}) },
		"results": func() (tools.Function, error) {
			return tools.Func(tools.Schema{Name: "f"}, func() (int, int) { return 0, 0 })
		},
		"three results": func() (tools.Function, error) {
			return tools.Func(tools.Schema{Name: "f"}, func() (int, int, error) { return 0, 0, nil })
		},
		"declared type": func() (tools.Function, error) {
			return tools.Func(tools.Schema{Name: "f", Params: []tools.Param{{Name: "a", Type: tools.String}}}, func(a int) {})
		},
		"bad default": func() (tools.Function, error) {
			return tools.Func(tools.Schema{Name: "f", Params: []tools.Param{{Name: "a", Default: "x"}}}, func(a int) {})
		},
	} {
		_, err := build()
		assert.ErrorIs(t, err, tools.ErrInvalidFunction, name)
	}

	good := tools.MustFunc(tools.Schema{Name: "f", Params: p}, func(a int) {})
	reg, err := tools.NewRegistry(good)
	require.NoError(t, err)
	for name, f := range map[string]tools.Function{
		"duplicate":     good,
		"reserved help": tools.MustFunc(tools.Schema{Name: "help"}, func() {}),
		"reserved list": tools.MustFunc(tools.Schema{Name: "list_functions"}, func() {}),
		"bad name":      tools.MustFunc(tools.Schema{Name: "not valid"}, func() {}),
		"bad param":     tools.MustFunc(tools.Schema{Name: "g", Params: []tools.Param{{Name: "1a"}}}, func(int) {}),
		"no handler":    {Schema: tools.Schema{Name: "h"}},
		"unknown type":  {Schema: tools.Schema{Name: "h", Params: []tools.Param{{Name: "a", Type: "date"}}}, Handler: nop},
		"twice":         {Schema: tools.Schema{Name: "h", Params: []tools.Param{{Name: "a"}, {Name: "a"}}}, Handler: nop},
		"default type":  {Schema: tools.Schema{Name: "h", Params: []tools.Param{{Name: "a", Type: tools.Integer, Default: "x"}}}, Handler: nop},
		"default kind":  {Schema: tools.Schema{Name: "h", Params: []tools.Param{{Name: "a", Default: make(chan int)}}}, Handler: nop},
	} {
		assert.ErrorIs(t, reg.Register(f), tools.ErrInvalidFunction, name)
	}
	// A failed Register adds nothing.
	ok := tools.MustFunc(tools.Schema{Name: "ok"}, func() {})
	require.ErrorIs(t, reg.Register(ok, good), tools.ErrInvalidFunction)
	assert.Len(t, reg.Schemas(), 1)
	assert.Panics(t, func() { tools.MustFunc(tools.Schema{Name: "f"}, 1) })
}

func nop(context.Context, tools.Args) (object.Value, error) { return object.None{}, nil }

// A Handler function gets bound arguments with defaults; its parameter
// types are checked before it runs.
func TestHandlerFunction(t *testing.T) {
	var got tools.Args
	f := tools.Function{
		Schema: tools.Schema{Name: "echo", Params: []tools.Param{
			{Name: "text", Type: tools.String},
			{Name: "times", Type: tools.Integer, Default: 2},
			{Name: "extra", Type: tools.Object, Optional: true},
			{Name: "anything"},
		}},
		Handler: func(_ context.Context, a tools.Args) (object.Value, error) {
			got = a
			return a["text"], nil
		},
	}
	reg, err := tools.NewRegistry(f)
	require.NoError(t, err)
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg})
	assert.Equal(t, "'hi'", agenttest.OK(t, e, "h", "echo('hi', anything=[1])"))
	assert.Equal(t, tools.Args{"text": object.Str("hi"), "times": object.Int(2), "anything": object.List{object.Int(1)}}, got)
	res := agenttest.Execute(t, e, "h", "echo('hi', 2, [1], 0)")
	assert.Contains(t, res.Text, "TypeError: echo() argument 'extra' must be dict, not list")
}

func TestSchemaExports(t *testing.T) {
	reg := agenttest.Functions(t)
	var names []string
	for _, s := range reg.Schemas() {
		names = append(names, s.Category+"/"+s.Name)
	}
	assert.Equal(t, []string{"data/fetch", "data/get_weather", "data/lookup", "math/add", "time/wait_ms"}, names)

	defs := reg.Tools()
	require.Len(t, defs, 5)
	got, err := json.Marshal(defs[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"name": "get_weather",
		"description": "Current weather for a city.\nData is made up.",
		"parameters": {
			"type": "object",
			"properties": {
				"city": {"type": "string", "description": "city name"},
				"units": {"type": "string", "description": "metric or imperial", "default": "metric"}
			},
			"required": ["city"]
		}
	}`, string(got))
	assert.JSONEq(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a"]}`, string(defs[3].Parameters))
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(tools.Schema{Name: "f"}.JSONSchema()))

	s := reg.Schemas()[1]
	assert.Equal(t, "get_weather(city: str, units: str = 'metric')", s.Signature())
	assert.Equal(t, `get_weather(city: str, units: str = 'metric')

    Current weather for a city.
    Data is made up.

    Args:
        city (required): city name
        units: metric or imperial

    Returns:
        a dict with city, temp_c and units`, s.Help())
	assert.Equal(t, "add(a: int, b: int = None)", reg.Schemas()[3].Signature())
}
