package typecheck_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/wasm"
)

// checker is the package's shared Checker: compiling the module (or loading
// it from the cache) once keeps the tests fast.
func checker(t *testing.T) *typecheck.Checker {
	t.Helper()
	c, err := typecheck.Default(context.Background())
	require.NoError(t, err)
	return c
}

func check(t *testing.T, req typecheck.Request) *typecheck.Result {
	t.Helper()
	res, err := checker(t).Check(context.Background(), req)
	require.NoError(t, err)
	return res
}

const badCall = "def add(x: int, y: int) -> int:\n    return x + y\n\nresult = add(1, '2')\n"

func TestCleanCode(t *testing.T) {
	res := check(t, typecheck.Request{Code: "def add(x: int, y: int) -> int:\n    return x + y\n\nprint(add(1, 2))\n"})
	assert.True(t, res.Clean())
	assert.Empty(t, res.Text)
	assert.NoError(t, res.Err())
}

func TestDiagnostics(t *testing.T) {
	res := check(t, typecheck.Request{Code: badCall, Format: typecheck.Concise})
	require.Len(t, res.Diagnostics, 1)
	d := res.Diagnostics[0]
	assert.Equal(t, typecheck.Diagnostic{Path: "main.py", Line: 4, Column: 17, EndLine: 4, EndColumn: 20,
		Rule: "invalid-argument-type", Severity: typecheck.SeverityError,
		Message: "Argument to function `add` is incorrect: Expected `int`, found `Literal[\"2\"]`"}, d)
	assert.Equal(t, "main.py:4:17: error[invalid-argument-type] Argument to function `add` is incorrect: Expected `int`, found `Literal[\"2\"]`\n", res.Text)
	assert.Equal(t, strings.TrimSuffix(res.Text, "\n"), d.String())

	err := res.Err()
	require.ErrorIs(t, err, typecheck.ErrTypeErrors)
	var tcErr *typecheck.Error
	require.ErrorAs(t, err, &tcErr)
	assert.Contains(t, err.Error(), "1 problem; nothing was run")
}

func TestFullFormatShowsTheSource(t *testing.T) {
	res := check(t, typecheck.Request{Code: badCall, Path: "calc.py"})
	assert.Contains(t, res.Text, "error[invalid-argument-type]: Argument to function `add` is incorrect")
	assert.Contains(t, res.Text, "--> calc.py:4:17")
	assert.Contains(t, res.Text, "4 | result = add(1, '2')")
	assert.Equal(t, "calc.py", res.Diagnostics[0].Path)
}

func TestEveryFormatRenders(t *testing.T) {
	for _, f := range typecheck.Formats {
		t.Run(string(f), func(t *testing.T) {
			res := check(t, typecheck.Request{Code: "x: int = 'nope'\n", Format: f})
			require.Len(t, res.Diagnostics, 1)
			assert.Equal(t, "invalid-assignment", res.Diagnostics[0].Rule)
			assert.NotEmpty(t, res.Text)
		})
	}
	res := check(t, typecheck.Request{Code: "x: int = 'nope'\n", Format: typecheck.Concise, Color: true})
	assert.True(t, strings.HasPrefix(res.Text, "\x1b"), "colour asked for: %q", res.Text)
}

func TestParseFormat(t *testing.T) {
	f, err := typecheck.ParseFormat("JSON-Lines")
	require.NoError(t, err)
	assert.Equal(t, typecheck.JSONLines, f)
	_, err = typecheck.ParseFormat("xml")
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	assert.Contains(t, err.Error(), "full, concise")
	_, err = checker(t).Check(context.Background(), typecheck.Request{Code: "1", Format: "xml"})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
}

func TestSyntaxErrorIsADiagnostic(t *testing.T) {
	res := check(t, typecheck.Request{Code: "def f(:\n"})
	require.NotEmpty(t, res.Diagnostics)
	assert.Equal(t, "invalid-syntax", res.Diagnostics[0].Rule)
}

func TestUnsupportedStdlibIsFlagged(t *testing.T) {
	res := check(t, typecheck.Request{Code: "import socket\n"})
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, "unresolved-import", res.Diagnostics[0].Rule)
	assert.True(t, check(t, typecheck.Request{Code: "import json\nprint(json.dumps([1]))\n"}).Clean())
}

func TestStubs(t *testing.T) {
	stubs := "def fetch(url: str, *, timeout: float = 10) -> dict[str, int]: ...\nasync def slow(n: int) -> int: ...\n"
	assert.True(t, check(t, typecheck.Request{Code: "r = fetch('x', timeout=2)\nprint(r['a'] + 1)\n", Stubs: stubs}).Clean())
	res := check(t, typecheck.Request{Code: "fetch(1)\nfetch('x', retries=3)\n", Stubs: stubs, Format: typecheck.Concise})
	rules := []string{}
	for _, d := range res.Diagnostics {
		rules = append(rules, d.Rule)
	}
	assert.Equal(t, []string{"invalid-argument-type", "unknown-argument"}, rules, res.Text)
	// Without the stubs the name is unknown.
	res = check(t, typecheck.Request{Code: "fetch('x')\n"})
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, "unresolved-reference", res.Diagnostics[0].Rule)
}

func TestModuleStubs(t *testing.T) {
	mods := []typecheck.ModuleStub{{Name: "tools", Source: "async def add(*, a: int, b: int) -> int: ...\n"}}
	assert.True(t, check(t, typecheck.Request{Code: "import tools\nawait tools.add(a=1, b=2)\n", Modules: mods}).Clean())
	res := check(t, typecheck.Request{Code: "from tools import add\nawait add(a='x', b=2)\n", Modules: mods})
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, "invalid-argument-type", res.Diagnostics[0].Rule)

	for _, name := range []string{"json", "builtins", "typing", "../etc", "a.b-c", ""} {
		_, err := checker(t).Check(context.Background(), typecheck.Request{Code: "1", Modules: []typecheck.ModuleStub{{Name: name}}})
		require.ErrorIs(t, err, runtime.ErrInvalidOption, name)
	}
}

// TestChecksDoNotLeak: one check's script, stubs and modules are never
// visible to a later check on the same (reused) instance.
func TestChecksDoNotLeak(t *testing.T) {
	c, err := typecheck.New(context.Background())
	require.NoError(t, err)
	defer c.Close(context.Background())
	ctx := context.Background()
	secret := []typecheck.ModuleStub{{Name: "secret", Source: "TOKEN: str\n"}}
	_, err = c.Check(ctx, typecheck.Request{Code: "import secret\n", Modules: secret})
	require.NoError(t, err)
	_, err = c.Check(ctx, typecheck.Request{Code: "PASSWORD = 'x'\n", Path: "other.py", Stubs: "KEY: str\n"})
	require.NoError(t, err)
	for _, code := range []string{"import secret\n", "import other\n", "from " + strings.TrimSuffix(typecheck.StubsPath, ".pyi") + " import KEY\n"} {
		res, err := c.Check(ctx, typecheck.Request{Code: code})
		require.NoError(t, err)
		require.Len(t, res.Diagnostics, 1, code)
		assert.Equal(t, "unresolved-import", res.Diagnostics[0].Rule, code)
	}
}

func TestContextChecksLaterSnippetsAgainstEarlierOnes(t *testing.T) {
	var c typecheck.Context
	stubs := "def lookup(key: str) -> int: ...\n"
	snippets := []string{
		"import math\ndef area(r: float) -> float:\n    return math.pi * r * r\ntotal = 0\n",
		"class Point:\n    def __init__(self, x: int) -> None:\n        self.x = x\np = Point(lookup('x'))\n",
		// Names can be bound again with other values, as at run time.
		"total = total + 1\ntotal = area(p.x)\nprint(math.sqrt(total))\n",
	}
	for _, code := range snippets {
		req := typecheck.Request{Code: code, Stubs: stubs}
		c.Apply(&req)
		res := check(t, req)
		require.True(t, res.Clean(), "%s: %s", code, res.Text)
		c.Commit(code)
	}
	req := typecheck.Request{Code: "x = 1\narea('big')\np.y\n", Stubs: stubs, Format: typecheck.Concise}
	c.Apply(&req)
	res := check(t, req)
	require.Len(t, res.Diagnostics, 2, res.Text)
	// Lines are the snippet's own, not shifted by the context.
	assert.Equal(t, 2, res.Diagnostics[0].Line)
	assert.Equal(t, "invalid-argument-type", res.Diagnostics[0].Rule)
	assert.Equal(t, 3, res.Diagnostics[1].Line)
	assert.Equal(t, "unresolved-attribute", res.Diagnostics[1].Rule)
	assert.Equal(t, strings.Join(snippets, ""), c.Code)

	// Problems of the earlier snippets themselves are not reported again.
	c.Commit("undefined_name\n")
	req = typecheck.Request{Code: "print(total)\n", Stubs: stubs}
	c.Apply(&req)
	assert.True(t, check(t, req).Clean())
}

// What a diagnostic says of an earlier snippet points at it: shown in the
// stubs file after the stubs, as upstream's worker appends each snippet
// there (same file, line and excerpt), not clamped onto the new snippet.
// A name assigned in an earlier snippet can still be assigned another type.
func TestContextDiagnosticsPointIntoEarlierSnippets(t *testing.T) {
	for _, tc := range []struct {
		stubs, where string
		excerpt      []string
	}{
		{"", "--> repl_type_stubs.pyi:3:5", []string{"2 | x = 1", "3 | def twice(v: int) -> int:", "Parameter declared here", "4 |     return v * 2"}},
		{"def fetch(url: str) -> int: ...\nY: int\n", "--> repl_type_stubs.pyi:5:5",
			[]string{"4 | x = 1", "5 | def twice(v: int) -> int:", "Parameter declared here"}},
	} {
		var c typecheck.Context
		c.Commit("x = 1\ndef twice(v: int) -> int:\n    return v * 2")
		req := typecheck.Request{Code: "twice('a')", Stubs: tc.stubs}
		c.Apply(&req)
		res := check(t, req)
		require.Len(t, res.Diagnostics, 1, res.Text)
		assert.Equal(t, typecheck.DefaultPath, res.Diagnostics[0].Path)
		assert.Equal(t, 1, res.Diagnostics[0].Line)
		assert.Contains(t, res.Text, "--> main.py:1:7")
		assert.Contains(t, res.Text, tc.where)
		for _, line := range tc.excerpt {
			assert.Contains(t, res.Text, line)
		}
		assert.NotContains(t, res.Text, "--> main.py:1:1", "a span of the earlier snippet clamped onto this one")

		req = typecheck.Request{Code: "x = 'a'\nx.upper()", Stubs: tc.stubs}
		c.Apply(&req)
		assert.True(t, check(t, req).Clean(), "a name of an earlier snippet cannot be assigned again")
	}
}

func TestDeclarations(t *testing.T) {
	decl := typecheck.Declarations(map[string]object.Value{"name": object.Str("x"), "n": object.Int(3), "items": object.List{}})
	assert.Equal(t, "from typing import Any\nitems: list[Any]\nn: int\nname: str\n", decl)
	res := check(t, typecheck.Request{Code: "print(name.upper(), n + 1, len(items))\nn.upper()\n", Stubs: decl})
	require.Len(t, res.Diagnostics, 1, res.Text)
	assert.Equal(t, 2, res.Diagnostics[0].Line)
}

func TestInvalidRequests(t *testing.T) {
	for _, p := range []string{"../x.py", "dir/x.py", "x.txt", ".py", typecheck.StubsPath, "x\x00.py"} {
		_, err := checker(t).Check(context.Background(), typecheck.Request{Code: "1", Path: p})
		require.ErrorIs(t, err, runtime.ErrInvalidOption, p)
	}
	// runtime.Unlimited is no limit here too.
	res, err := checker(t).Check(context.Background(), typecheck.Request{Code: "1", Limits: runtime.Limits{MaxMemory: runtime.Unlimited, MaxDuration: runtime.Unlimited}})
	require.NoError(t, err)
	assert.True(t, res.Clean())
	for _, req := range []typecheck.Request{
		{Code: "x = '\xff\xfe'\n"},
		{Code: "1", Stubs: "\xff"},
		{Code: "1", Modules: []typecheck.ModuleStub{{Name: "m", Source: "\xc3"}}},
	} {
		_, err := checker(t).Check(context.Background(), req)
		require.ErrorIs(t, err, runtime.ErrInvalidOption, "%q", req.Code)
	}
}

// TestHostileCode: inputs written to break the checker get diagnostics or
// a typed error, and the checker keeps working.
func TestHostileCode(t *testing.T) {
	ctx := context.Background()
	c := checker(t)
	cases := map[string]string{
		"nul bytes": "x = 1\x00\x00\n",

		"deep nesting":    strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500) + "\n",
		"deeper nesting":  "x = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n",
		"long line":       "x = " + strings.Repeat("1 + ", 20000) + "1\n",
		"unbalanced":      strings.Repeat("(", 1000),
		"many defs":       strings.Repeat("def f(x: int) -> int: return x\n", 2000),
		"recursive alias": "type A = list[A]\nx: A = [[[]]]\n",
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := c.Check(ctx, typecheck.Request{Code: code, Limits: runtime.Limits{MaxDuration: 30 * time.Second}})
			if err != nil {
				require.True(t, errors.Is(err, typecheck.ErrCheckerFailed) || errors.Is(err, runtime.ErrInvalidOption) ||
					runtime.LimitOf(err) != runtime.NoLimit, "untyped error: %v", err)
				t.Logf("error: %v", err)
			} else {
				t.Logf("%d diagnostics", len(res.Diagnostics))
			}
			ok := check(t, typecheck.Request{Code: "print(1)\n"})
			require.True(t, ok.Clean(), "the checker works after %s", name)
		})
	}
}

func TestTimeLimit(t *testing.T) {
	code := strings.Repeat("def f(x: int) -> int:\n    return [x for _ in range(3)][0] + 1\nf(1)\n", 3000)
	_, err := checker(t).Check(context.Background(), typecheck.Request{Code: code, Path: "slow.py", Limits: runtime.Limits{MaxDuration: time.Millisecond}})
	require.ErrorIs(t, err, runtime.ErrTimeLimit)
	assert.Contains(t, err.Error(), "1ms")
	assert.True(t, check(t, typecheck.Request{Code: "print(1)\n"}).Clean())
}

func TestMemoryLimit(t *testing.T) {
	// 40 MB of code does not fit a budget of 1 KiB plus the headroom.
	code := strings.Repeat("x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n", 700_000)
	_, err := checker(t).Check(context.Background(), typecheck.Request{Code: code, Limits: runtime.Limits{MaxMemory: 1024}})
	require.ErrorIs(t, err, runtime.ErrMemoryLimit)
	assert.True(t, check(t, typecheck.Request{Code: "print(1)\n"}).Clean())
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := checker(t).Check(ctx, typecheck.Request{Code: "print(1)\n"})
	require.ErrorIs(t, err, runtime.ErrCancelled)
	require.ErrorIs(t, err, context.Canceled)
}

func TestConcurrentChecks(t *testing.T) {
	c := checker(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := fmt.Sprintf("def f%d(x: int) -> int:\n    return x\nf%d('%d')\n", i, i, i)
			res, err := c.Check(context.Background(), typecheck.Request{Code: code})
			if err == nil && (len(res.Diagnostics) != 1 || res.Diagnostics[0].Rule != "invalid-argument-type" || !strings.Contains(res.Diagnostics[0].Message, fmt.Sprintf("f%d", i))) {
				err = fmt.Errorf("check %d: %s", i, res.Text)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestClosedChecker(t *testing.T) {
	c, err := typecheck.New(context.Background())
	require.NoError(t, err)
	require.NoError(t, c.Close(context.Background()))
	_, err = c.Check(context.Background(), typecheck.Request{Code: "1"})
	require.ErrorIs(t, err, typecheck.ErrClosed)
	require.NoError(t, c.Close(context.Background()))
}

func TestSameMontyVersionAsTheInterpreter(t *testing.T) {
	e, err := runtime.Default(context.Background())
	require.NoError(t, err)
	assert.Equal(t, e.MontyVersion(), checker(t).MontyVersion())
	assert.Equal(t, wasm.MontyVersion, e.MontyVersion(), "wasm.MontyVersion is not the version the module reports")
}

// TestLazy: a Lazy checker compiles at its first use; a caller that gives
// up waiting does not stop the compilation for the next one.
func TestLazy(t *testing.T) {
	c := typecheck.Lazy()
	defer c.Close(context.Background())
	assert.Empty(t, c.MontyVersion())
	assert.Zero(t, c.CompileInfo())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Load(cancelled), runtime.ErrCancelled)
	res, err := c.Check(context.Background(), typecheck.Request{Code: "print(1)\n"})
	require.NoError(t, err)
	assert.True(t, res.Clean())
	assert.NotEmpty(t, c.MontyVersion())
	assert.NotZero(t, c.CompileInfo().Ready)

	closed := typecheck.Lazy()
	require.NoError(t, closed.Close(context.Background()))
	require.ErrorIs(t, closed.Load(context.Background()), typecheck.ErrClosed)
}

// TestDiagnosticsNameTheStubsFile: a diagnostic that points into the stubs
// names them as upstream Monty's worker does (repl_type_stubs.pyi), so that
// clients comparing messages see the same text.
func TestDiagnosticsNameTheStubsFile(t *testing.T) {
	res := check(t, typecheck.Request{Code: "lookup(1)\n", Stubs: "from typing import Any\n\ndef lookup(key: str) -> int: ...\n"})
	require.Len(t, res.Diagnostics, 1, res.Text)
	assert.Contains(t, res.Text, "--> repl_type_stubs.pyi:3:5", res.Text)
}
