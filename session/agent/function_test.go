package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/agent"
)

func TestHostFunctionCalls(t *testing.T) {
	e := newExecutor(t, agent.ExecutorOptions{})
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
		assert.Equal(t, want, ok(t, e, "calls", code), code)
	}
}

func TestHostFunctionErrors(t *testing.T) {
	e := newExecutor(t, agent.ExecutorOptions{})
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
		res := execute(t, e, "errors", code)
		require.Error(t, res.Err, code)
		assert.Contains(t, res.Text, want, code)
		assert.Contains(t, res.Text, "Traceback", code)
	}
	// Errors are ordinary exceptions: try/except catches them and the
	// session goes on.
	assert.Equal(t, "'TypeError'", ok(t, e, "errors", "try:\n    add('x', 1)\nexcept TypeError as e:\n    r = type(e).__name__\nr"))
	assert.Equal(t, "'RuntimeError'", ok(t, e, "errors", "try:\n    get_weather('')\nexcept RuntimeError as e:\n    r = type(e).__name__\nr"))
}

func TestFuncInvalid(t *testing.T) {
	p := []agent.Param{{Name: "a"}}
	for name, build := range map[string]func() (agent.Function, error){
		"not a func": func() (agent.Function, error) { return agent.Func(agent.Schema{Name: "f"}, 42) },
		"nil func":   func() (agent.Function, error) { return agent.Func(agent.Schema{Name: "f"}, (func())(nil)) },
		"variadic": func() (agent.Function, error) {
			return agent.Func(agent.Schema{Name: "f", Params: p}, func(a ...int) {})
		},
		"count": func() (agent.Function, error) { return agent.Func(agent.Schema{Name: "f"}, func(a int) {}) },
		"results": func() (agent.Function, error) {
			return agent.Func(agent.Schema{Name: "f"}, func() (int, int) { return 0, 0 })
		},
		"three results": func() (agent.Function, error) {
			return agent.Func(agent.Schema{Name: "f"}, func() (int, int, error) { return 0, 0, nil })
		},
		"declared type": func() (agent.Function, error) {
			return agent.Func(agent.Schema{Name: "f", Params: []agent.Param{{Name: "a", Type: agent.String}}}, func(a int) {})
		},
		"bad default": func() (agent.Function, error) {
			return agent.Func(agent.Schema{Name: "f", Params: []agent.Param{{Name: "a", Default: "x"}}}, func(a int) {})
		},
	} {
		_, err := build()
		assert.ErrorIs(t, err, agent.ErrInvalidFunction, name)
	}

	good := agent.MustFunc(agent.Schema{Name: "f", Params: p}, func(a int) {})
	reg, err := agent.NewRegistry(good)
	require.NoError(t, err)
	for name, f := range map[string]agent.Function{
		"duplicate":     good,
		"reserved help": agent.MustFunc(agent.Schema{Name: "help"}, func() {}),
		"reserved list": agent.MustFunc(agent.Schema{Name: "list_functions"}, func() {}),
		"bad name":      agent.MustFunc(agent.Schema{Name: "not valid"}, func() {}),
		"bad param":     agent.MustFunc(agent.Schema{Name: "g", Params: []agent.Param{{Name: "1a"}}}, func(int) {}),
		"no handler":    {Schema: agent.Schema{Name: "h"}},
		"unknown type":  {Schema: agent.Schema{Name: "h", Params: []agent.Param{{Name: "a", Type: "date"}}}, Handler: nop},
		"twice":         {Schema: agent.Schema{Name: "h", Params: []agent.Param{{Name: "a"}, {Name: "a"}}}, Handler: nop},
		"default type":  {Schema: agent.Schema{Name: "h", Params: []agent.Param{{Name: "a", Type: agent.Integer, Default: "x"}}}, Handler: nop},
		"default kind":  {Schema: agent.Schema{Name: "h", Params: []agent.Param{{Name: "a", Default: make(chan int)}}}, Handler: nop},
	} {
		assert.ErrorIs(t, reg.Register(f), agent.ErrInvalidFunction, name)
	}
	// A failed Register adds nothing.
	ok := agent.MustFunc(agent.Schema{Name: "ok"}, func() {})
	require.ErrorIs(t, reg.Register(ok, good), agent.ErrInvalidFunction)
	assert.Len(t, reg.Schemas(), 1)
	assert.Panics(t, func() { agent.MustFunc(agent.Schema{Name: "f"}, 1) })
}

func nop(context.Context, agent.Args) (object.Value, error) { return object.None{}, nil }

// A Handler function gets bound arguments with defaults; its parameter
// types are checked before it runs.
func TestHandlerFunction(t *testing.T) {
	var got agent.Args
	f := agent.Function{
		Schema: agent.Schema{Name: "echo", Params: []agent.Param{
			{Name: "text", Type: agent.String},
			{Name: "times", Type: agent.Integer, Default: 2},
			{Name: "extra", Type: agent.Object, Optional: true},
			{Name: "anything"},
		}},
		Handler: func(_ context.Context, a agent.Args) (object.Value, error) {
			got = a
			return a["text"], nil
		},
	}
	reg, err := agent.NewRegistry(f)
	require.NoError(t, err)
	e := newExecutor(t, agent.ExecutorOptions{Functions: reg})
	assert.Equal(t, "'hi'", ok(t, e, "h", "echo('hi', anything=[1])"))
	assert.Equal(t, agent.Args{"text": object.Str("hi"), "times": object.Int(2), "anything": object.List{object.Int(1)}}, got)
	res := execute(t, e, "h", "echo('hi', 2, [1], 0)")
	assert.Contains(t, res.Text, "TypeError: echo() argument 'extra' must be dict, not list")
}

func TestSchemaExports(t *testing.T) {
	reg := testRegistry(t)
	var names []string
	for _, s := range reg.Schemas() {
		names = append(names, s.Category+"/"+s.Name)
	}
	assert.Equal(t, []string{"data/fetch", "data/get_weather", "data/lookup", "math/add", "time/wait_ms"}, names)

	tools := reg.Tools()
	require.Len(t, tools, 5)
	got, err := json.Marshal(tools[1])
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
	assert.JSONEq(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a"]}`, string(tools[3].Parameters))
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(agent.Schema{Name: "f"}.JSONSchema()))

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
