package tools_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/agent/agenttest"
)

// TestRegistryStubsTypeCheck: the generated stubs, checked by the real
// checker, accept the calls the host functions accept and flag the ones
// that fail at run time.
func TestRegistryStubsTypeCheck(t *testing.T) {
	c, err := typecheck.Default(context.Background())
	require.NoError(t, err)
	stubs := agenttest.Functions(t).Stubs()
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
