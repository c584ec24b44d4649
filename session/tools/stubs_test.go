package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/tools"
)

const arrayAnn = "list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]"

// stubCases are single functions and the stub each must render.
var stubCases = []struct {
	name string
	fn   tools.Function
	want string
}{
	{"bare", fn("f", ""), `def f() -> Any: ...`},
	{"every type", tools.Function{Schema: tools.Schema{Name: "types", Params: []tools.Param{
		{Name: "s", Type: tools.String}, {Name: "i", Type: tools.Integer}, {Name: "n", Type: tools.Number},
		{Name: "b", Type: tools.Boolean}, {Name: "a", Type: tools.Array}, {Name: "o", Type: tools.Object},
		{Name: "x"},
	}}}, `def types(s: str, i: int, n: float, b: bool, a: ` + arrayAnn + `, o: dict[str, Any], x: Any) -> Any: ...`},
	{"every type optional", tools.Function{Schema: tools.Schema{Name: "opt", Params: []tools.Param{
		{Name: "s", Type: tools.String, Optional: true}, {Name: "i", Type: tools.Integer, Optional: true},
		{Name: "n", Type: tools.Number, Optional: true}, {Name: "b", Type: tools.Boolean, Optional: true},
		{Name: "a", Type: tools.Array, Optional: true}, {Name: "o", Type: tools.Object, Optional: true},
		{Name: "x", Optional: true},
	}}}, `def opt(s: str | None = None, i: int | None = None, n: float | None = None, b: bool | None = None, a: ` + arrayAnn + ` | None = None, o: dict[str, Any] | None = None, x: Any = None) -> Any: ...`},
	{"defaults", tools.Function{Schema: tools.Schema{Name: "defaults", Params: []tools.Param{
		{Name: "none", Default: object.None{}},
		{Name: "nil_ptr", Type: tools.Integer, Default: (*int)(nil)},
		{Name: "yes", Type: tools.Boolean, Default: true},
		{Name: "no", Type: tools.Boolean, Default: false},
		{Name: "neg", Type: tools.Integer, Default: -3},
		{Name: "huge", Type: tools.Integer, Default: uint64(math.MaxUint64)},
		{Name: "big", Type: tools.Integer, Default: new(big.Int).Lsh(big.NewInt(1), 80)},
		{Name: "ratio", Type: tools.Number, Default: 2.5},
		{Name: "whole", Type: tools.Number, Default: 3.0},
		{Name: "tiny", Type: tools.Number, Default: 1e-7},
		{Name: "vast", Type: tools.Number, Default: 1e16},
		{Name: "inf", Type: tools.Number, Default: math.Inf(1)},
		{Name: "nan", Type: tools.Number, Default: math.NaN()},
		{Name: "s", Type: tools.String, Default: "it's \"quoted\"\n\\ é \x00"},
		{Name: "list", Type: tools.Array, Default: []int{1, 2}},
		{Name: "dict", Type: tools.Object, Default: map[string]int{"a": 1}},
		{Name: "when", Default: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{Name: "bad", Default: make(chan int)},
	}}}, `def defaults(none: Any = None, nil_ptr: int | None = None, yes: bool | None = True, no: bool | None = False, neg: int | None = -3, huge: int | None = 18446744073709551615, big: int | None = 1208925819614629174706176, ratio: float | None = 2.5, whole: float | None = 3.0, tiny: float | None = 1e-07, vast: float | None = 1e+16, inf: float | None = ..., nan: float | None = ..., s: str | None = 'it\'s "quoted"\n\\ é \x00', list: ` + arrayAnn + ` | None = ..., dict: dict[str, Any] | None = ..., when: Any = ..., bad: Any = ...) -> Any: ...`},
	{"weather", tools.Function{Schema: tools.Schema{
		Name: "get_weather", Description: "Current weather for a city.", ReturnType: tools.Object,
		Params: []tools.Param{
			{Name: "city", Type: tools.String},
			{Name: "units", Type: tools.String, Default: "metric"},
			{Name: "days", Type: tools.Integer, Optional: true},
		},
	}}, `def get_weather(city: str, units: str | None = 'metric', days: int | None = None) -> dict[str, Any]:
    """Current weather for a city."""`},
	{"async", tools.Function{Schema: tools.Schema{Name: "fetch", ReturnType: tools.String,
		Params: []tools.Param{{Name: "url", Type: tools.String}}}, Async: true},
		`async def fetch(url: str) -> str: ...`},
	{"async docstring", tools.Function{Schema: tools.Schema{Name: "fetch", ReturnType: tools.Null, Description: "Fetch."}, Async: true},
		`async def fetch() -> None:
    """Fetch."""`},
	{"return None", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.Null}}, `def r() -> None: ...`},
	{"return str", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.String}}, `def r() -> str: ...`},
	{"return int", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.Integer}}, `def r() -> int: ...`},
	{"return float", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.Number}}, `def r() -> float: ...`},
	{"return bool", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.Boolean}}, `def r() -> bool: ...`},
	{"return list", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.Array}}, `def r() -> list[Any]: ...`},
	{"return dict", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: tools.Object}}, `def r() -> dict[str, Any]: ...`},
	{"return unknown", tools.Function{Schema: tools.Schema{Name: "r", ReturnType: "date"}}, `def r() -> Any: ...`},
	{"quotes", fn("q", `Say "hi" or 'hi'.`), `def q() -> Any:
    """Say "hi" or 'hi'."""`},
	{"leading and trailing quote", fn("q", `"quoted"`), `def q() -> Any:
    """"quoted\""""`},
	{"triple quotes", fn("q", `a """b""" c '''d''' """"e`), `def q() -> Any:
    """a \"\""b\"\"" c '''d''' \"\"\""e"""`},
	{"backslashes", fn("q", `C:\path\n \" \\ end\`), `def q() -> Any:
    """C:\\path\\n \\" \\\\ end\\"""`},
	{"newlines", fn("q", "First line.\n\n  Indented, then\nlast."), `def q() -> Any:
    """First line.

      Indented, then
    last.
    """`},
	{"trailing newline", fn("q", "One.\nTwo.\n"), `def q() -> Any:
    """One.
    Two.
    """`},
	{"control characters", fn("q", "nul\x00 cr\r\n tab\t esc\x1b del\x7f nel\u0085 ls\u2028 ps\u2029 bad\xff é😀"), "def q() -> Any:\n" +
		`    """nul\x00 cr\r` + "\n" + `     tab` + "\t" + ` esc\x1b del\x7f nel\x85 ls\u2028 ps\u2029 bad\ufffd é😀` + "\n" + `    """`},
	{"required after optional", tools.Function{Schema: tools.Schema{Name: "f", ReturnType: tools.Integer,
		Description: "Both.", Params: []tools.Param{
			{Name: "a", Type: tools.Integer, Default: 1},
			{Name: "b", Type: tools.String},
		}}}, `@overload
def f(a: int | None, b: str) -> int:
    """Both."""
@overload
def f(*, b: str) -> int: ...`},
	{"required after optionals", tools.Function{Schema: tools.Schema{Name: "g", ReturnType: tools.Null, Params: []tools.Param{
		{Name: "a", Type: tools.String},
		{Name: "b", Type: tools.Integer, Optional: true},
		{Name: "c", Type: tools.Boolean},
		{Name: "d", Default: "x"},
		{Name: "e", Type: tools.Array},
		{Name: "f", Type: tools.Number, Default: 0.5},
	}}, Async: true}, `@overload
async def g(a: str, b: int | None, c: bool, d: Any, e: ` + arrayAnn + `, f: float | None = 0.5) -> None: ...
@overload
async def g(a: str, *, c: bool, d: Any = 'x', e: ` + arrayAnn + `, f: float | None = 0.5) -> None: ...
@overload
async def g(a: str, b: int | None, c: bool, *, e: ` + arrayAnn + `, f: float | None = 0.5) -> None: ...`},
	{"keyword parameter", tools.Function{Schema: tools.Schema{Name: "k", ReturnType: tools.String,
		Params: []tools.Param{{Name: "x", Type: tools.Integer}, {Name: "class", Type: tools.String}}}},
		`def k(*args: Any, **kwargs: Any) -> str: ...`},
	{"duplicate parameter", tools.Function{Schema: tools.Schema{Name: "k", Params: []tools.Param{{Name: "x"}, {Name: "x"}}}},
		`def k(*args: Any, **kwargs: Any) -> Any: ...`},
	{"soft keywords", tools.Function{Schema: tools.Schema{Name: "match", Params: []tools.Param{{Name: "case"}, {Name: "type"}, {Name: "_"}}}},
		`def match(case: Any, type: Any, _: Any) -> Any: ...`},
	{"keyword name", fn("class", "A class."), `# "class" is not a Python identifier: Python code cannot call it`},
	{"invalid name", fn("two words\n\"x\"", ""), `# "two words\n\"x\"" is not a Python identifier: Python code cannot call it`},
}

func fn(name, description string) tools.Function {
	return tools.Function{Schema: tools.Schema{Name: name, Description: description}}
}

func TestFunctionStub(t *testing.T) {
	var checks []pyCheck
	for _, c := range stubCases {
		got := c.fn.Stub()
		assert.Equal(t, c.want, got, c.name)
		header := "from typing import Any, overload\n\n"
		checks = append(checks, pyCheck{Name: c.name, Source: header + got, Doc: c.fn.Description})
	}
	checkPython(t, checks)
}

// The stubs of the test registry: inferred return types, an async
// function, defaults, and the introspection built-ins.
func TestRegistryStubs(t *testing.T) {
	reg := agenttest.Functions(t)
	want := `from typing import Any

async def fetch(key: str, delay_ms: int | None = 100) -> str:
    """Fetch a document after a delay."""

def get_weather(city: str, units: str | None = 'metric') -> dict[str, Any]:
    """Current weather for a city.
    Data is made up.
    """

def lookup(key: str) -> str:
    """Look a key up."""

def add(a: int, b: int | None = None) -> int:
    """Add two integers."""

def wait_ms(ms: int) -> int:
    """Block for a while."""

def list_functions(category: str | None = None) -> list[dict[str, Any]]:
    """List the host functions you can call."""

def help(name: object | None = None) -> str | None:
    """Show how to call a host function or use a host object, or list them all."""
`
	got := reg.Stubs()
	assert.Equal(t, want, got)
	assert.Equal(t, got, reg.Stubs(), "deterministic")

	empty, err := tools.NewRegistry()
	require.NoError(t, err)
	assert.Equal(t, `from typing import Any

def list_functions(category: str | None = None) -> list[dict[str, Any]]:
    """List the host functions you can call."""

def help(name: object | None = None) -> str | None:
    """Show how to call a host function or use a host object, or list them all."""
`, empty.Stubs())

	// Overloads import overload; host functions named like the names the
	// annotations use are defined under those names, and the annotations
	// reach the shadowed ones through a module alias.
	h := func(name string, params ...tools.Param) tools.Function {
		return tools.Function{Schema: tools.Schema{Name: name, Category: "x", Params: params}, Handler: nop}
	}
	odd, err := tools.NewRegistry(
		h("set", tools.Param{Name: "key", Type: tools.String}, tools.Param{Name: "value", Type: tools.Array}),
		h("Any", tools.Param{Name: "a", Optional: true}, tools.Param{Name: "b", Type: tools.Object}),
		h("_typing"),
		h("str", tools.Param{Name: "x", Type: tools.String}),
	)
	require.NoError(t, err)
	got = odd.Stubs()
	assert.Equal(t, `from typing import overload
import typing as _typing_
import builtins as _builtins

@overload
def Any(a: _typing_.Any, b: dict[_builtins.str, _typing_.Any]) -> _typing_.Any: ...
@overload
def Any(*, b: dict[_builtins.str, _typing_.Any]) -> _typing_.Any: ...

def _typing() -> _typing_.Any: ...

def set(key: _builtins.str, value: list[_typing_.Any] | tuple[_typing_.Any, ...] | _builtins.set[_typing_.Any] | frozenset[_typing_.Any]) -> _typing_.Any: ...

def str(x: _builtins.str) -> _typing_.Any: ...

def list_functions(category: _builtins.str | None = None) -> list[dict[_builtins.str, _typing_.Any]]:
    """List the host functions you can call."""

def help(name: object | None = None) -> _builtins.str | None:
    """Show how to call a host function or use a host object, or list them all."""
`, got)

	checkPython(t, []pyCheck{{Name: "registry", Source: reg.Stubs()}, {Name: "empty", Source: empty.Stubs()}, {Name: "shadowing", Source: got}})
}

// The overloads for required parameters after optional ones accept
// exactly the calls the runtime binds: every number of positional
// arguments with every set of the remaining parameters by keyword is
// bound by the host function and by Python's inspect against the stub.
func TestStubOverloadsMatchBinding(t *testing.T) {
	schemas := [][]tools.Param{
		{{Name: "a", Optional: true}, {Name: "b"}},
		{{Name: "a"}, {Name: "b", Optional: true}, {Name: "c"}, {Name: "d", Default: 1}, {Name: "e"}, {Name: "f", Optional: true}},
		{{Name: "a", Optional: true}, {Name: "b", Default: 2}, {Name: "c"}, {Name: "d", Optional: true}, {Name: "e"}},
		{{Name: "a", Optional: true}, {Name: "b"}, {Name: "c", Optional: true}},
		{{Name: "a"}, {Name: "b", Optional: true}},
	}
	var fns []tools.Function
	for i, params := range schemas {
		fns = append(fns, tools.Function{Schema: tools.Schema{Name: fmt.Sprintf("f%d", i), Params: params}, Handler: nop})
	}
	reg, err := tools.NewRegistry(fns...)
	require.NoError(t, err)
	host := reg.Host()
	type call struct {
		Fn     string   `json:"fn"`
		Args   int      `json:"args"`
		Kwargs []string `json:"kwargs"`
		Binds  bool     `json:"binds"`
	}
	var calls []call
	for _, f := range fns {
		n := len(f.Params)
		for k := 0; k <= n; k++ {
			for mask := 0; mask < 1<<(n-k); mask++ {
				c := call{Fn: f.Name, Args: k, Kwargs: []string{}}
				args := make([]object.Value, k)
				for i := range args {
					args[i] = object.Int(i)
				}
				var kwargs []object.Pair
				for i := k; i < n; i++ {
					if mask&(1<<(i-k)) != 0 {
						c.Kwargs = append(c.Kwargs, f.Params[i].Name)
						kwargs = append(kwargs, object.Pair{Key: object.Str(f.Params[i].Name), Value: object.Int(i)})
					}
				}
				_, err := host.Functions[f.Name].Func(context.Background(), args, kwargs)
				var exc *runtime.Exception
				if err != nil && !(errors.As(err, &exc) && exc.Type == "TypeError") {
					t.Fatalf("%s: %v", f.Name, err)
				}
				c.Binds = err == nil
				calls = append(calls, c)
			}
		}
	}
	assert.Contains(t, reg.Stubs(), "@overload")
	in, err := json.Marshal(map[string]any{"stubs": reg.Stubs(), "calls": calls})
	require.NoError(t, err)
	out := runPython(t, `
import inspect, json, sys
import typing
req = json.load(sys.stdin)
defs = {}
typing.overload = lambda f: defs.setdefault(f.__name__, []).append(f) or f
ns = {}
exec(req["stubs"], ns)
bad = 0
for c in req["calls"]:
    sigs = defs.get(c["fn"]) or [ns[c["fn"]]]
    args = list(range(c["args"]))
    kwargs = {k: 0 for k in c["kwargs"]}
    binds = False
    for f in sigs:
        try:
            inspect.signature(f).bind(*args, **kwargs)
            binds = True
        except TypeError:
            pass
    if binds != c["binds"]:
        bad += 1
        print(c["fn"], args, sorted(kwargs), "stub binds:", binds, "runtime binds:", c["binds"])
print("checked", len(req["calls"]), "calls,", bad, "differ")
`, in)
	assert.Contains(t, out, fmt.Sprintf("checked %d calls, 0 differ", len(calls)), out)
}

// Random descriptions, defaults and names always give valid Python, and
// the docstring holds the description.
func TestStubsRandomText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{`"`, `"""`, `'`, `\`, "\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\u0085", "\u2028", "\xff", "é", "😀", " ", "a", "#", "{", "}", "%s"}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	var checks []pyCheck
	for i := range 300 {
		f := tools.Function{Schema: tools.Schema{Name: "f", Description: text(), Params: []tools.Param{
			{Name: "a", Type: tools.String, Default: text()},
			{Name: "b", Optional: rng.IntN(2) == 0},
		}}, Async: i%2 == 0}
		if rng.IntN(4) == 0 {
			f.Name = text()
		}
		checks = append(checks, pyCheck{Name: fmt.Sprintf("random %d", i), Source: "from typing import Any, overload\n" + f.Stub(), Doc: f.Description})
	}
	checkPython(t, checks)
}

func TestFuncReturnType(t *testing.T) {
	for _, c := range []struct {
		fn   any
		want tools.ParamType
	}{
		{func() {}, tools.Null},
		{func() error { return nil }, tools.Null},
		{func(context.Context) error { return nil }, tools.Null},
		{func() string { return "" }, tools.String},
		{func() (string, error) { return "", nil }, tools.String},
		{func() int8 { return 0 }, tools.Integer},
		{func() uint64 { return 0 }, tools.Integer},
		{func() float32 { return 0 }, tools.Number},
		{func() bool { return false }, tools.Boolean},
		{func() []string { return nil }, tools.Array},
		{func() [2]int { return [2]int{} }, tools.Array},
		{func() map[string]int { return nil }, tools.Object},
		{func() map[int]string { return nil }, tools.Any},
		{func() agenttest.Weather { return agenttest.Weather{} }, tools.Object},
		{func() *agenttest.Weather { return nil }, tools.Any},
		{func() any { return nil }, tools.Any},
		{func() error { return nil }, tools.Null},
		{func() (error, error) { return nil, nil }, tools.Any},
		{func() []byte { return nil }, tools.Any},
		{func() time.Time { return time.Time{} }, tools.Any},
		{func() big.Int { return big.Int{} }, tools.Integer},
		{func() json.Number { return "" }, tools.Number},
		{func() object.Value { return nil }, tools.Any},
		{func() object.None { return object.None{} }, tools.Null},
		{func() object.Str { return "" }, tools.String},
		{func() object.Int { return 0 }, tools.Integer},
		{func() object.Float { return 0 }, tools.Number},
		{func() object.Bool { return false }, tools.Boolean},
		{func() object.List { return nil }, tools.Array},
		{func() object.Dict { return nil }, tools.Object},
		{func() object.Tuple { return nil }, tools.Any},
		{func() object.Bytes { return nil }, tools.Any},
	} {
		f, err := tools.Func(tools.Schema{Name: "f"}, c.fn)
		require.NoError(t, err)
		assert.Equal(t, c.want, f.ReturnType, "%T", c.fn)
	}

	// A declared type that fits is kept (an int is a number; an interface
	// may hold anything).
	for _, c := range []struct {
		declared tools.ParamType
		fn       any
	}{
		{tools.Number, func() int { return 0 }},
		{tools.Integer, func() any { return 0 }},
		{tools.Null, func() object.Value { return nil }},
		{tools.Object, func() *agenttest.Weather { return nil }},
		{tools.String, func() (string, error) { return "", nil }},
	} {
		f, err := tools.Func(tools.Schema{Name: "f", ReturnType: c.declared}, c.fn)
		require.NoError(t, err)
		assert.Equal(t, c.declared, f.ReturnType)
	}

	// A declared type the Go result contradicts is refused.
	for _, c := range []struct {
		declared tools.ParamType
		fn       any
	}{
		{tools.String, func() int { return 0 }},
		{tools.Integer, func() float64 { return 0 }},
		{tools.Integer, func() {}},
		{tools.Object, func() error { return nil }},
		{tools.Null, func() string { return "" }},
		{tools.Array, func() map[string]int { return nil }},
		{"date", func() string { return "" }},
	} {
		_, err := tools.Func(tools.Schema{Name: "f", ReturnType: c.declared}, c.fn)
		assert.ErrorIs(t, err, tools.ErrInvalidFunction, "%s %T", c.declared, c.fn)
	}

	// The return type is part of the schema but not of the tool
	// definition, and a function without a result stubs as returning None.
	f := tools.MustFunc(tools.Schema{Name: "log", Params: []tools.Param{{Name: "msg"}}}, func(msg string) {})
	assert.Equal(t, tools.Null, f.ReturnType)
	assert.Equal(t, "log(msg: str)", f.Signature())
	assert.JSONEq(t, `{"type":"object","properties":{"msg":{"type":"string"}},"required":["msg"]}`, string(f.JSONSchema()))
	assert.Equal(t, `def log(msg: str) -> None: ...`, f.Stub())
	reg, err := tools.NewRegistry(f)
	require.NoError(t, err)
	assert.Equal(t, tools.Null, reg.Schemas()[0].ReturnType)
	tool, err := json.Marshal(reg.Tools()[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"log","description":"","parameters":{"type":"object","properties":{"msg":{"type":"string"}},"required":["msg"]}}`, string(tool))
}

// Register accepts Null as a return type only, and refuses unknown ones.
func TestRegisterReturnType(t *testing.T) {
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	for _, typ := range []tools.ParamType{tools.Any, tools.Null, tools.String, tools.Integer, tools.Number, tools.Boolean, tools.Array, tools.Object} {
		f := tools.Function{Schema: tools.Schema{Name: "r" + string(typ), ReturnType: typ}, Handler: nop}
		assert.NoError(t, reg.Register(f), typ)
	}
	assert.ErrorIs(t, reg.Register(tools.Function{Schema: tools.Schema{Name: "bad", ReturnType: "date"}, Handler: nop}), tools.ErrInvalidFunction)
	param := tools.Function{Schema: tools.Schema{Name: "p", Params: []tools.Param{{Name: "a", Type: tools.Null}}}, Handler: nop}
	assert.ErrorIs(t, reg.Register(param), tools.ErrInvalidFunction)
	_, err = tools.Func(param.Schema, func(a int) {})
	assert.ErrorIs(t, err, tools.ErrInvalidFunction)
}

// pyCheck is stub source for checkPython: it must parse, and when Doc is
// set its first function's docstring must hold Doc.
type pyCheck struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Doc    string `json:"doc"`
}

// checkPython parses every source with Python's ast module in one run.
func checkPython(t *testing.T, checks []pyCheck) {
	t.Helper()
	in, err := json.Marshal(checks)
	require.NoError(t, err)
	out := runPython(t, `
import ast, json, sys
checks = json.load(sys.stdin)
bad = 0
for c in checks:
    try:
        mod = ast.parse(c["source"])
    except (SyntaxError, ValueError) as e:
        bad += 1
        print(c["name"], "does not parse:", e, repr(c["source"]))
        continue
    doc = c["doc"]
    defs = [d for d in mod.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not doc or not defs:
        continue
    got = ast.get_docstring(defs[0], clean=False)
    # Undo the indentation of later lines and the line the closing quotes
    # are on.
    lines = got.split("\n")
    got = "\n".join(lines[:1] + [l[4:] if l.startswith("    ") else l for l in lines[1:]])
    if "\n" in doc and not doc.endswith("\n"):
        got = got.removesuffix("\n")
    if got != doc:
        bad += 1
        print(c["name"], "docstring", repr(got), "is not", repr(doc))
print("checked", len(checks), "stubs,", bad, "bad")
`, in)
	assert.Contains(t, out, fmt.Sprintf("checked %d stubs, 0 bad", len(checks)), out)
}

// runPython runs script with python3, stdin as its input, and returns its
// output.
func runPython(t *testing.T, script string, stdin []byte) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: cannot check that the stubs are valid Python")
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}
