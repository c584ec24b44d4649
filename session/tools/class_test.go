package tools_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

type account struct {
	ID      string  `json:"id"`
	Owner   string  `json:"owner"`
	Balance float64 `json:"balance"`
	Note    *string `json:"note"`
	secret  string

	mu      sync.Mutex
	release chan struct{} // Hang waits for it
}

func (a *account) Deposit(amount float64) (float64, error) {
	if amount <= 0 {
		return 0, errors.New("amount must be positive")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Balance += amount
	return a.Balance, nil
}

func (a *account) Statement(ctx context.Context, last int) ([]string, error) {
	return []string{a.ID, a.Owner}[:min(last, 2)], ctx.Err()
}

func (a *account) Explode() int               { panic("boom") }
func (a *account) Leak() chan int             { return make(chan int) }
func (a *account) Hang(context.Context)       { <-a.release }
func (a *account) Rename(name string)         { a.Owner = name }
func (a *account) Self() *account             { return a }
func (*account) Tag(t string) (string, error) { return "#" + t, nil }

func accountClass(t testing.TB) *tools.Class {
	t.Helper()
	c, err := tools.NewClass("Account", "A bank account.", (*account)(nil),
		tools.MustMethod(tools.Schema{Name: "deposit", Description: "Add money; returns the new balance.",
			Params: []tools.Param{{Name: "amount", Description: "how much"}}}, (*account).Deposit),
		tools.MustMethod(tools.Schema{Name: "statement", Params: []tools.Param{{Name: "last", Default: 2}}}, (*account).Statement),
		tools.MustMethod(tools.Schema{Name: "explode"}, (*account).Explode),
		tools.MustMethod(tools.Schema{Name: "leak"}, (*account).Leak),
		tools.MustMethod(tools.Schema{Name: "hang"}, (*account).Hang),
		tools.MustMethod(tools.Schema{Name: "rename", Params: []tools.Param{{Name: "name"}}}, (*account).Rename),
	)
	require.NoError(t, err)
	async := tools.MustMethod(tools.Schema{Name: "fetch_tag", Params: []tools.Param{{Name: "t"}}}, (*account).Tag)
	async.Async = true
	c.Methods = append(c.Methods, async)
	return c
}

func accountRegistry(t testing.TB) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	require.NoError(t, reg.RegisterClass(accountClass(t)))
	return reg
}

func execIn(t testing.TB, s *session.Session, code string, in ...runtime.Input) (object.Value, error) {
	t.Helper()
	res, err := s.ExecWith(context.Background(), code, in...)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Value, nil
}

// TestHostClassObjects: a Go struct with methods, given to Python as a host
// object: fields are read from the Go value at each access, methods run on
// it (sync and async), help() describes it, and the class is usable by name.
func TestHostClassObjects(t *testing.T) {
	reg := accountRegistry(t)
	acct := &account{ID: "a-1", Owner: "Ada", Balance: 10}
	obj, err := reg.Object(acct)
	require.NoError(t, err)
	s := agenttest.OpenSession(t, reg)
	in := runtime.Input{Name: "acct", Value: obj}

	v, err := execIn(t, s, "before = acct.balance\nafter = acct.deposit(5)\n(before, after, acct.balance, acct.owner, acct.note)", in)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Float(10), object.Float(15), object.Float(15), object.Str("Ada"), object.None{}}, v)
	assert.Equal(t, 15.0, acct.Balance, "the method ran on the Go value")

	acct.Balance = 100 // the host changes it: the code sees the change
	v, err = execIn(t, s, "acct.balance")
	require.NoError(t, err)
	assert.Equal(t, object.Float(100), v, "the object is kept between calls, and reads are fresh")

	v, err = execIn(t, s, `
import asyncio
async def tags():
    return await asyncio.gather(acct.fetch_tag('x'), acct.fetch_tag('y'))
(await tags(), acct.statement(), acct.statement(last=1), isinstance(acct, Account), type(acct) is Account)`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.List{object.Str("#x"), object.Str("#y")},
		object.List{object.Str("a-1"), object.Str("Ada")}, object.List{object.Str("a-1")},
		object.Bool(true), object.Bool(true)}, v)

	v, err = execIn(t, s, "help(acct)")
	require.NoError(t, err)
	text := string(v.(object.Str))
	for _, want := range []string{"class Account", "A bank account.", "balance: float", "note: str | None",
		"deposit(amount: float)", "Add money", "fetch_tag(t: str)"} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "secret", "unexported fields are not attributes")
	v, err = execIn(t, s, "(help('Account.deposit'), help(Account) == help(acct))")
	require.NoError(t, err)
	assert.Contains(t, string(v.(object.Tuple)[0].(object.Str)), "amount: float")
	assert.Equal(t, object.Bool(true), v.(object.Tuple)[1])
	v, err = execIn(t, s, "help()")
	require.NoError(t, err)
	assert.Contains(t, string(v.(object.Str)), "Host classes")
}

// TestHostClassFailures: whatever the code does with a host object, and
// whatever a method does, the host does not crash and the code gets a
// Python exception it can read.
func TestHostClassFailures(t *testing.T) {
	reg := accountRegistry(t)
	acct := &account{ID: "a-1", release: make(chan struct{})}
	defer close(acct.release)
	obj, err := reg.Object(acct)
	require.NoError(t, err)
	s := agenttest.OpenSession(t, reg)
	in := runtime.Input{Name: "acct", Value: obj}
	for code, want := range map[string]string{
		"acct.deposit(-1)":         "RuntimeError: amount must be positive",
		"acct.deposit('lots')":     "TypeError: Account.deposit() argument 'amount' must be float, not str",
		"acct.deposit()":           "TypeError: Account.deposit() missing 1 required argument(s): 'amount'",
		"acct.deposit(1, 2)":       "TypeError: Account.deposit() takes 1 positional arguments but 2 were given",
		"acct.explode()":           "RuntimeError: host function Account.explode panicked: boom",
		"acct.leak()":              "TypeError: leak() returned a value Python cannot hold",
		"acct.withdraw(1)":         "AttributeError: 'Account' object has no attribute 'withdraw'",
		"acct.nothing":             "AttributeError",
		"acct.secret":              "AttributeError",
		"acct._Account__mu":        "AttributeError",
		"f = acct.deposit\nf(1)":   "TypeError: Account.deposit is a host method: call it directly",
		"Account()":                "TypeError: Account objects are made by the host",
		"Account.deposit(acct, 1)": "AttributeError: type object 'Account' has no attribute 'deposit'",
	} {
		_, err := execIn(t, s, code, in)
		var pyErr *runtime.Error
		require.ErrorAs(t, err, &pyErr, code)
		assert.Contains(t, pyErr.Type+": "+pyErr.Message, want, code)
	}

	// Assignments change only the sandbox's copy.
	v, err := execIn(t, s, "acct.owner = 'Mallory'\n(acct.owner, acct.rename('Bob'))", in)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("Mallory"), object.None{}}, v)
	assert.Equal(t, "Bob", acct.Owner)

	// A method that blocks past the time limit stops the run with it.
	limits := runtime.DefaultLimits()
	limits.MaxDuration = 300 * time.Millisecond
	s2, err := session.Open(context.Background(), "hang", session.Options{Store: memstore.New(memstore.Options{}), Host: reg.Host(), Limits: limits})
	require.NoError(t, err)
	defer s2.Close(context.Background())
	_, err = execIn(t, s2, "acct.hang()", in)
	require.ErrorIs(t, err, runtime.ErrTimeLimit)
}

// TestHostObjectAcrossProcesses: a session saved holding a host object keeps
// the reference. Restored by another registry (another process), using it
// raises RuntimeError until the host offers the object again under the same
// key; an object offered without a key, or released, stays unavailable.
func TestHostObjectAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	open := func(reg *tools.Registry) *session.Session {
		s, err := session.Open(ctx, "bank", session.Options{Store: st, Host: reg.Host()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	first := accountRegistry(t)
	keyed, err := first.ObjectKey(&account{ID: "a-1", Balance: 1}, "a-1")
	require.NoError(t, err)
	loose, err := first.Object(&account{ID: "a-2", Balance: 2})
	require.NoError(t, err)
	_, err = execIn(t, open(first), "mine = acct\nother = loose", runtime.Input{Name: "acct", Value: keyed}, runtime.Input{Name: "loose", Value: loose})
	require.NoError(t, err)

	second := accountRegistry(t) // another process: nothing registered yet
	s := open(second)
	_, err = execIn(t, s, "mine.balance")
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	assert.Equal(t, "RuntimeError", pyErr.Type)
	assert.Contains(t, pyErr.Message, "is not available")

	again := &account{ID: "a-1", Balance: 42}
	_, err = second.ObjectKey(again, "a-1")
	require.NoError(t, err)
	v, err := execIn(t, s, "(mine.balance, mine.deposit(1), type(mine).__name__)")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Float(42), object.Float(43), object.Str("Account")}, v)
	assert.Equal(t, 43.0, again.Balance)

	_, err = execIn(t, s, "other.balance")
	require.ErrorAs(t, err, &pyErr, "an object without a key is not found again")
	assert.Contains(t, pyErr.Message, "is not available")

	second.Release(object.NameUUID("monty-go host object", "Account", "a-1"))
	_, err = execIn(t, s, "mine.deposit(1)")
	require.ErrorAs(t, err, &pyErr, "released")
	assert.Contains(t, pyErr.Message, "is not available")
}

// TestDataclassesBothWays: Go structs reach Python as dataclasses (fields,
// nested types, optional fields) and come back into Go structs, from host
// dataclasses and from dataclasses the code defines; a field the Go struct
// does not have is refused with a TypeError naming it.
func TestDataclassesBothWays(t *testing.T) {
	type item struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	type order struct {
		ID    int     `json:"id"`
		Items []item  `json:"items"`
		Note  *string `json:"note,omitempty"`
	}
	var got []order
	var mu sync.Mutex
	place := tools.MustFunc(tools.Schema{Name: "place", Params: []tools.Param{{Name: "order"}}}, func(o order) int {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, o)
		return len(o.Items)
	})
	reg, err := tools.NewRegistry(place)
	require.NoError(t, err)
	s := agenttest.OpenSession(t, reg)

	in, err := object.Dataclass(order{ID: 7, Items: []item{{SKU: "tea", Qty: 2}}})
	require.NoError(t, err)
	v, err := execIn(t, s, `
import dataclasses
o.items[0].qty += 1
(dataclasses.is_dataclass(o), repr(o.items[0]), o.note, place(o), o)`, runtime.Input{Name: "o", Value: in})
	require.NoError(t, err)
	tuple := v.(object.Tuple)
	assert.Equal(t, object.Tuple{object.Bool(true), object.Str("item(sku='tea', qty=3)"), object.None{}, object.Int(1)}, tuple[:4])
	var back order
	require.NoError(t, object.IntoStrict(tuple[4], &back))
	assert.Equal(t, order{ID: 7, Items: []item{{SKU: "tea", Qty: 3}}}, back)
	require.Len(t, got, 1)
	assert.Equal(t, back, got[0], "the host function received the dataclass as its struct")

	// A Go dataclass is data: under a registry's host, a field it does not
	// have is simply missing, as on any object.
	v, err = execIn(t, s, "(hasattr(o, 'colour'), getattr(o, 'colour', 'none'))")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Bool(false), object.Str("none")}, v)
	_, err = execIn(t, s, "o.total()")
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	assert.Equal(t, "AttributeError", pyErr.Type, pyErr.Message)

	// A dataclass the code defines converts too.
	v, err = execIn(t, s, `
from dataclasses import dataclass
@dataclass
class Item:
    sku: str
    qty: int
@dataclass
class Order:
    id: int
    items: list
    note: str | None = None
place(Order(8, [Item('jam', 4)], note='gift'))`)
	require.NoError(t, err)
	assert.Equal(t, object.Int(1), v)
	note := "gift"
	assert.Equal(t, order{ID: 8, Items: []item{{SKU: "jam", Qty: 4}}, Note: &note}, got[1])

	// Unknown fields are refused, at any depth, naming the field.
	for code, field := range map[string]string{
		"place({'id': 9, 'itmes': []})": "itmes",
		"@dataclass\nclass Bad:\n    sku: str\n    qty: int\n    colour: str\nplace(Order(9, [Bad('a', 1, 'red')]))": "colour",
	} {
		_, err := execIn(t, s, code)
		require.ErrorAs(t, err, &pyErr, code)
		assert.Equal(t, "TypeError", pyErr.Type, code)
		assert.Contains(t, pyErr.Message, `unknown field "`+field+`"`, code)
	}
}

func TestNewClassInvalid(t *testing.T) {
	deposit := tools.MustMethod(tools.Schema{Name: "deposit", Params: []tools.Param{{Name: "amount"}}}, (*account).Deposit)
	for name, build := range map[string]func() error{
		"bad name": func() error { _, err := tools.NewClass("not a name", "", (*account)(nil)); return err },
		"nil type": func() error { _, err := tools.NewClass("A", "", nil); return err },
		"private": func() error {
			_, err := tools.NewClass("A", "", (*account)(nil), tools.MustMethod(tools.Schema{Name: "_x"}, (*account).Explode))
			return err
		},
		"duplicate": func() error { _, err := tools.NewClass("A", "", (*account)(nil), deposit, deposit); return err },
		"clash": func() error {
			_, err := tools.NewClass("A", "", (*account)(nil), tools.MustMethod(tools.Schema{Name: "balance"}, (*account).Explode))
			return err
		},
		"receiver": func() error {
			_, err := tools.NewClass("A", "", (*sync.Mutex)(nil), deposit)
			return err
		},
		"taken": func() error {
			reg := accountRegistry(t)
			return reg.RegisterClass(accountClass(t))
		},
		"no get": func() error {
			_, err := tools.NewRegistry()
			if err != nil {
				return err
			}
			reg, _ := tools.NewRegistry()
			return reg.RegisterClass(&tools.Class{Name: "A", Type: reflect.TypeFor[int](), Attributes: []tools.Attribute{{Name: "x"}}})
		},
	} {
		assert.ErrorIs(t, build(), tools.ErrInvalidFunction, name)
	}
	_, err := tools.Method(tools.Schema{Name: "m"}, 42)
	assert.ErrorIs(t, err, tools.ErrInvalidFunction)

	reg := accountRegistry(t)
	_, err = reg.Object(struct{}{})
	assert.ErrorIs(t, err, tools.ErrUnknownClass)
	_, err = reg.Object(account{}) // a value, not the registered *account
	assert.ErrorIs(t, err, tools.ErrUnknownClass)
}

// TestExplicitClass: a class described by hand (no struct reflection), whose
// attribute getter panics or returns what Python cannot hold.
func TestExplicitClass(t *testing.T) {
	type clock struct{ ticks int }
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	tick := tools.Function{Schema: tools.Schema{Name: "tick", ReturnType: tools.Integer}, Handler: func(ctx context.Context, _ tools.Args) (object.Value, error) {
		c := tools.Receiver(ctx).(*clock)
		c.ticks++
		return object.Int(c.ticks), nil
	}}
	require.NoError(t, reg.RegisterClass(&tools.Class{Name: "Clock", Type: reflect.TypeFor[*clock](), Methods: []tools.Function{tick},
		Attributes: []tools.Attribute{
			{Name: "ticks", Type: tools.Integer, Get: func(_ context.Context, o any) (object.Value, error) { return object.Int(o.(*clock).ticks), nil }},
			{Name: "broken", Get: func(context.Context, any) (object.Value, error) { panic("getter") }},
			{Name: "weird", Get: func(context.Context, any) (object.Value, error) { return object.FromGo(make(chan int)) }},
		}}))
	c := &clock{}
	obj, err := reg.Object(c)
	require.NoError(t, err)
	s := agenttest.OpenSession(t, reg)
	in := runtime.Input{Name: "clock", Value: obj}
	v, err := execIn(t, s, "clock.tick()\nclock.tick()\nclock.ticks", in)
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), v)
	for code, want := range map[string]string{"clock.broken": "panicked: getter", "clock.weird": "cannot hold"} {
		_, err := execIn(t, s, code)
		var pyErr *runtime.Error
		require.ErrorAs(t, err, &pyErr)
		assert.Contains(t, pyErr.Message, want, code)
	}
	assert.Contains(t, reg.Stubs(), "class Clock:\n    ticks: int\n    broken: Any\n    weird: Any\n    def tick(self) -> int: ...")
}

// TestExecutorHostObjectGlobal: an Executor's code (which takes no inputs)
// reaches a host object the registry offers as a global, type checks
// against its class, and keeps using it across calls.
func TestExecutorHostObjectGlobal(t *testing.T) {
	reg := accountRegistry(t)
	acct := &account{ID: "a-9", Balance: 1}
	obj, err := reg.ObjectKey(acct, "a-9")
	require.NoError(t, err)
	require.NoError(t, reg.SetGlobal("acct", obj))
	assert.ErrorIs(t, reg.SetGlobal("Account", obj), tools.ErrInvalidFunction, "a class's name")
	assert.ErrorIs(t, reg.SetGlobal("not a name", obj), tools.ErrInvalidFunction)
	assert.Contains(t, reg.Stubs(), "\nacct: Account\n")

	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: reg, TypeCheck: true})
	assert.Equal(t, "3.0", agenttest.OK(t, e, "bank", "acct.deposit(2)"))
	assert.Equal(t, "3.0", agenttest.OK(t, e, "bank", "acct.balance"))
	res := agenttest.Execute(t, e, "bank", "acct.deposit('x')")
	assert.Equal(t, agent.TypeCheckErrorType, res.ErrorType, res.Text)
	assert.Equal(t, 3.0, acct.Balance, "refused by the type check: nothing ran")
	events := []agent.EventType{}
	res, err = e.ExecuteEvents(context.Background(), "bank", agenttest.CodeArgs("acct.deposit(1)"), func(ev agent.Event) { events = append(events, ev.Type) })
	require.NoError(t, err)
	require.NoError(t, res.Err)
	assert.Contains(t, events, agent.ToolCallStart, "method calls are reported like host function calls")
}

// TestNewClassFieldNames: fields Python could not name are left out, not
// a reason to refuse the class; a method parameter cannot be called self.
func TestNewClassFieldNames(t *testing.T) {
	type record struct {
		ID    string `json:"_id"`
		First string `json:"first-name"`
		Last  string `json:"last"`
	}
	c, err := tools.NewClass("Record", "", (*record)(nil))
	require.NoError(t, err)
	require.Len(t, c.Attributes, 1)
	assert.Equal(t, "last", c.Attributes[0].Name)

	self := tools.MustMethod(tools.Schema{Name: "rename", Params: []tools.Param{{Name: "self"}}}, (*account).Rename)
	_, err = tools.NewClass("Account", "", (*account)(nil), self)
	assert.ErrorIs(t, err, tools.ErrInvalidFunction)
}
