package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/agent"
)

// TestRegistryStubsTypeCheck: the generated stubs, checked by the real
// checker, accept the calls the host functions accept and flag the ones
// that fail at run time.
func TestRegistryStubsTypeCheck(t *testing.T) {
	c, err := typecheck.Default(context.Background())
	require.NoError(t, err)
	stubs := testRegistry(t).Stubs()
	checkCode := func(code string) *typecheck.Result {
		t.Helper()
		res, err := c.Check(context.Background(), typecheck.Request{Code: code, Stubs: stubs, Format: typecheck.Concise})
		require.NoError(t, err)
		return res
	}
	for _, code := range []string{
		"w = get_weather('Oslo')\nprint(w['city'])\n",
		"get_weather(city='Oslo', units='imperial')\n",
		"print(add(1) + add(1, 2))\n",
		"doc = await fetch('k')\nprint(doc.upper())\n",
		"import asyncio\na, b = await asyncio.gather(fetch('a'), fetch('b', delay_ms=5))\n",
		"print(lookup('x'), wait_ms(3) + 1)\n",
		"print(list_functions(), list_functions('data'), help('add'))\n",
	} {
		res := checkCode(code)
		assert.True(t, res.Clean(), "%s: %s", code, res.Text)
	}
	for code, rule := range map[string]string{
		"get_weather(42)\n":              "invalid-argument-type",
		"get_weather()\n":                "missing-argument",
		"get_weather('Oslo', color=1)\n": "unknown-argument",
		"add('1', 2)\n":                  "invalid-argument-type",
		"fetch('k').upper()\n":           "unresolved-attribute",
		"lookup('x') + 1\n":              "unsupported-operator",
		"undefined_function()\n":         "unresolved-reference",
	} {
		res := checkCode(code)
		require.NotEmpty(t, res.Diagnostics, code)
		assert.Equal(t, rule, res.Diagnostics[0].Rule, "%s: %s", code, res.Text)
	}
}

// TestExecutorTypeCheck: with TypeCheck on, a call whose code has
// problems is not run; the model reads the diagnostics as the error text,
// and the session is unchanged. A call's type_check argument overrides the
// executor's setting.
func TestExecutorTypeCheck(t *testing.T) {
	e := newExecutor(t, agent.ExecutorOptions{TypeCheck: true, Stubs: "LIMIT: int\n"})
	assert.Contains(t, string(e.Tool().Parameters), `"type_check"`)
	res := execute(t, e, "t", "total = add(1, 2)\nprint(total, LIMIT if False else 0)")
	require.NoError(t, res.Err)

	res = execute(t, e, "t", "total = 100\nadd(total, 'x')")
	require.ErrorIs(t, res.Err, typecheck.ErrTypeErrors)
	assert.Equal(t, agent.TypeCheckErrorType, res.ErrorType)
	assert.Contains(t, res.Text, "error[invalid-argument-type]: Argument to function `add` is incorrect\n --> main.py:2:12")
	assert.Contains(t, res.Text, "the code was not run")
	assert.False(t, res.Saved)
	assert.Equal(t, "3", ok(t, e, "t", "total"), "the refused call changed nothing")

	// Checked against the session's own earlier calls.
	res = execute(t, e, "t", "total.upper()")
	require.ErrorIs(t, res.Err, typecheck.ErrTypeErrors)

	// The argument turns checking off for one call.
	res, err := e.Execute(context.Background(), "t", json.RawMessage(`{"code": "add(total, 'x')", "type_check": false}`))
	require.NoError(t, err)
	assert.Equal(t, "TypeError", res.ErrorType, "ran, and failed at run time")

	// ...and on, on an executor that does not check by default.
	plain := newExecutor(t, agent.ExecutorOptions{})
	res, err = plain.Execute(context.Background(), "t", json.RawMessage(`{"code": "add('a', 'b')", "type_check": true}`))
	require.NoError(t, err)
	require.ErrorIs(t, res.Err, typecheck.ErrTypeErrors)
	_, err = plain.Execute(context.Background(), "t", json.RawMessage(`{"code": "1", "type_check": "yes"}`))
	require.ErrorIs(t, err, agent.ErrBadArgs)
}

// TestClassStubsTypeCheck: a host class's stub lets the checker follow the
// code's use of its objects: attributes and method calls that work check
// clean, wrong ones are flagged before anything runs.
func TestClassStubsTypeCheck(t *testing.T) {
	c, err := typecheck.Default(context.Background())
	require.NoError(t, err)
	stubs := accountRegistry(t).Stubs() + "\n" + typecheck.Declarations(map[string]object.Value{"acct": accountObject(t)})
	for _, code := range []string{
		"total: float = acct.balance + acct.deposit(5)\nprint(acct.owner.upper(), acct.statement(1))\n",
		"import asyncio\nprint(await acct.fetch_tag('x'), isinstance(acct, Account))\n",
		"print(help(acct), help(Account), acct.note or '')\n",
	} {
		res, err := c.Check(context.Background(), typecheck.Request{Code: code, Stubs: stubs, Format: typecheck.Concise})
		require.NoError(t, err)
		assert.True(t, res.Clean(), "%s: %s", code, res.Text)
	}
	for code, rule := range map[string]string{
		"acct.deposit('lots')\n": "invalid-argument-type",
		"acct.withdraw(1)\n":     "unresolved-attribute",
		"acct.balance.upper()\n": "unresolved-attribute",
		"acct.note.upper()\n":    "unresolved-attribute",
		"acct.deposit()\n":       "missing-argument",
	} {
		res, err := c.Check(context.Background(), typecheck.Request{Code: code, Stubs: stubs, Format: typecheck.Concise})
		require.NoError(t, err)
		assert.Contains(t, res.Text, rule, code)
	}

	// An object of a class the stubs do not describe is Any: no false alarms.
	res, err := c.Check(context.Background(), typecheck.Request{Code: "acct.anything(1)\n",
		Stubs: typecheck.Declarations(map[string]object.Value{"acct": accountObject(t)}), Format: typecheck.Concise})
	require.NoError(t, err)
	assert.True(t, res.Clean(), res.Text)
}

func accountObject(t testing.TB) object.Value {
	t.Helper()
	obj, err := accountRegistry(t).Object(&account{})
	require.NoError(t, err)
	return obj
}
