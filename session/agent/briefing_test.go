package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// briefExecutor is an executor on a memory store with opts.
func briefExecutor(t testing.TB, opts ExecutorOptions) *Executor {
	t.Helper()
	if opts.Session.Store == nil {
		opts.Session.Store = memstore.New(memstore.Options{})
	}
	if opts.Keeper == nil {
		opts.Keeper = session.NewManager(session.Options{Store: opts.Session.Store}, session.ManagerOptions{})
		t.Cleanup(opts.Keeper.Close)
	}
	e, err := NewExecutor(opts)
	require.NoError(t, err)
	return e
}

// briefRun executes code in the session thread of e.
func briefRun(t testing.TB, e *Executor, thread, code string) *Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"code": code})
	require.NoError(t, err)
	res, err := e.Execute(context.Background(), thread, args)
	require.NoError(t, err)
	return res
}

// mustRun runs code that must succeed and returns the result's text.
func mustRun(t testing.TB, e *Executor, thread, code string) string {
	t.Helper()
	res := briefRun(t, e, thread, code)
	require.NoError(t, res.Err, "%s\n---\n%s", code, res.Text)
	return res.Text
}

// mustRaise runs code that must raise exc.
func mustRaise(t testing.TB, e *Executor, thread, code, exc string) {
	t.Helper()
	res := briefRun(t, e, thread, code)
	require.Error(t, res.Err, "%s should raise %s", code, exc)
	require.Equal(t, exc, res.ErrorType, "%s\n---\n%s", code, res.Text)
}

// Every claim the briefing makes about the language is run through the
// interpreter, as the executor runs the model's code: what it says works
// runs without an exception (the proofs assert their results), what it
// says does not work raises the exception the table records. The text is
// generated from the same table.
func TestBriefingClaims(t *testing.T) {
	e := briefExecutor(t, ExecutorOptions{})
	desc := e.Tool().Description
	works, fails := strings.Index(desc, "\nWorks:\n"), strings.Index(desc, "\nDoes not work:\n")
	require.True(t, works >= 0 && fails > works, desc)
	n := 0
	for _, f := range features {
		require.NotEmpty(t, f.proofs, "every claim has a proof: %s", f.text)
		section := desc[works : fails+1]
		if !f.works {
			section = desc[fails:]
		}
		assert.Contains(t, section, "\n- "+f.text+"\n", "the claim is in its section")
		for _, p := range f.proofs {
			n++
			thread := fmt.Sprintf("claim-%d", n)
			if f.works {
				require.Empty(t, p.raises, "a working feature's proof raises nothing: %s", f.text)
				mustRun(t, e, thread, p.code)
				continue
			}
			require.NotEmpty(t, p.raises, "a missing feature's proof names its exception: %s", f.text)
			mustRaise(t, e, thread, p.code, p.raises)
		}
	}
	t.Logf("%d claims, %d proofs run", len(features), n)
}

// The persistence rule in the text follows the session options, and
// holds: what persists, and what a raising or stopped call leaves.
func TestBriefingPersistence(t *testing.T) {
	const timeout = 300 * time.Millisecond
	loop := "x = 3\nwhile True:\n    pass"
	t.Run("default", func(t *testing.T) {
		e := briefExecutor(t, ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxDuration: timeout}}})
		assert.Contains(t, e.Tool().Description, "\n\nVariables, functions, classes and imports persist between calls of a session. "+
			"A call that raises or is stopped by a limit changes nothing: the session stays as before the call.\n")
		mustRun(t, e, "s", "import math\ndef f():\n    return 1\nclass C:\n    pass\nx = 1")
		mustRun(t, e, "s", "assert f() == 1 and isinstance(C(), C) and math.pi > 3 and x == 1")
		mustRaise(t, e, "s", "x = 2\nraise ValueError('no')", "ValueError")
		mustRaise(t, e, "s", loop, "TimeoutError")
		assert.Equal(t, "1", mustRun(t, e, "s", "x"))
	})
	t.Run("capture on error", func(t *testing.T) {
		e := briefExecutor(t, ExecutorOptions{Session: session.Options{CaptureOnError: true, Limits: runtime.Limits{MaxDuration: timeout}}})
		assert.Contains(t, e.Tool().Description, " A call that raises keeps what it changed before the exception; one stopped by a limit changes nothing.\n")
		mustRun(t, e, "s", "x = 1")
		mustRaise(t, e, "s", "x = 2\nraise ValueError('no')", "ValueError")
		mustRaise(t, e, "s", loop, "TimeoutError")
		assert.Equal(t, "2", mustRun(t, e, "s", "x"))
	})
	t.Run("json only", func(t *testing.T) {
		e := briefExecutor(t, ExecutorOptions{Session: session.Options{JSONOnly: true, Files: &session.Files{}}})
		assert.Contains(t, e.Tool().Description, "\n\nOnly global variables holding JSON data (dict, list, str, int, float, bool, None) persist between calls of a session; "+
			"define functions, classes and imports again in each call. A call that raises")
		assert.Contains(t, e.Tool().Description, "kept with the session.")
		mustRun(t, e, "s", "import math\ndef f():\n    return 1\nclass C:\n    pass\nx = {'a': [1, 2.5, None, True, 's']}\nopen('/work/a.txt', 'w').write('a')")
		mustRun(t, e, "s", "assert x == {'a': [1, 2.5, None, True, 's']} and open('/work/a.txt').read() == 'a'")
		for _, name := range []string{"f", "C", "math"} {
			mustRaise(t, e, "s", name, "NameError")
		}
	})
	t.Run("ephemeral", func(t *testing.T) {
		e := briefExecutor(t, ExecutorOptions{Session: session.Options{Ephemeral: true, Files: &session.Files{}}})
		desc := e.Tool().Description
		assert.Contains(t, desc, "\n\nNothing persists: every call starts with no variables.\n")
		assert.Contains(t, desc, "(16 MiB, 4096 entries), empty at the start of each call.")
		mustRun(t, e, "s", "x = 1\nopen('/work/a.txt', 'w').write('a')")
		mustRaise(t, e, "s", "x", "NameError")
		mustRaise(t, e, "s", "open('/work/a.txt').read()", "FileNotFoundError")
	})
}

// The limits line is the executor's actual settings, defaults applied.
func TestBriefingLimits(t *testing.T) {
	fns := func(t *testing.T) *tools.Registry {
		reg, err := tools.NewRegistry(tools.MustFunc(tools.Schema{Name: "ping"}, func() string { return "pong" }))
		require.NoError(t, err)
		return reg
	}
	for _, c := range []struct {
		name string
		opts ExecutorOptions
		want string
	}{
		{"defaults", ExecutorOptions{},
			"Limits per call: 5s of run time (host calls included), 16 MiB of memory, 1 MiB of print output, recursion depth 1000, 1000 host function calls."},
		{"set", ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxDuration: 90 * time.Second, MaxMemory: 64 << 20, MaxHostCalls: 20,
			MaxHostTime: 2 * time.Second, MaxOutput: 1536, MaxRecursion: 50}}},
			"Limits per call: 1m30s of run time (host calls included), 64 MiB of memory, 1.5 KiB of print output, recursion depth 50, 20 host function calls, 2s in host functions."},
		{"some set", ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxDuration: time.Second, MaxMemory: 8 << 20}}},
			"Limits per call: 1s of run time (host calls included), 8 MiB of memory, 1 MiB of print output, recursion depth 1000, 1000 host function calls."},
		{"none", ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxDuration: runtime.Unlimited, MaxMemory: runtime.Unlimited,
			MaxHostCalls: runtime.Unlimited, MaxOutput: runtime.Unlimited, MaxRecursion: 2000}}},
			"Limits per call: recursion depth 2000."},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Functions = fns(t)
			e := briefExecutor(t, c.opts)
			assert.Contains(t, e.Tool().Description, "\n"+c.want+"\n")
		})
	}
	// Without anything to call, no host call limit is told.
	e := briefExecutor(t, ExecutorOptions{})
	assert.Contains(t, e.Tool().Description, "\nLimits per call: 5s of run time (host calls included), 16 MiB of memory, 1 MiB of print output, recursion depth 1000.\n")

	// The numbers are the ones enforced.
	e = briefExecutor(t, ExecutorOptions{Functions: fns(t), Session: session.Options{Limits: runtime.Limits{MaxRecursion: 50, MaxOutput: 100, MaxHostCalls: 3}}})
	mustRun(t, e, "s", "def d(n):\n    return 0 if n == 0 else 1 + d(n - 1)\nd(40)")
	mustRaise(t, e, "s", "d(60)", "RecursionError")
	mustRun(t, e, "s", "for _ in range(3):\n    ping()")
	res := briefRun(t, e, "s", "for _ in range(4):\n    ping()")
	assert.ErrorIs(t, res.Err, runtime.ErrHostCallLimit)
	res = briefRun(t, e, "s", "print('x' * 101)")
	assert.ErrorIs(t, res.Err, runtime.ErrOutputLimit)
}

// What the text says of files holds: /work when the sessions have files,
// the mounts with their modes (never their host paths), and no other path.
func TestBriefingFiles(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		e := briefExecutor(t, ExecutorOptions{})
		assert.Contains(t, e.Tool().Description, "\nFiles: There is no file system: open() raises PermissionError.")
		mustRaise(t, e, "s", "open('/work/a.txt', 'w')", "PermissionError")
		mustRaise(t, e, "s", "open('/etc/hostname')", "PermissionError")
	})
	t.Run("work", func(t *testing.T) {
		e := briefExecutor(t, ExecutorOptions{Session: session.Options{Files: &session.Files{MaxBytes: 1 << 20, MaxEntries: 10}}})
		assert.Contains(t, e.Tool().Description, "\nFiles: /work is this session's own directory and the working directory (1 MiB, 10 entries), kept with the session. Other paths raise PermissionError.")
		mustRun(t, e, "s", "import os\nopen('notes.txt', 'w').write('hi')\nassert os.getcwd() == '/work'")
		assert.Equal(t, "'hi'", mustRun(t, e, "s", "open('/work/notes.txt').read()"))
		mustRaise(t, e, "s", "open('/etc/hostname')", "PermissionError")
	})
	t.Run("mounts", func(t *testing.T) {
		data, scratch := t.TempDir(), t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(data, "a.txt"), []byte("data"), 0o644))
		table, err := vfs.OpenMounts(
			vfs.MountSpec{Host: scratch, Guest: "/scratch", Mode: vfs.MountOverlay, WriteLimit: 1 << 10},
			vfs.MountSpec{Host: data, Guest: "/data"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = table.Close() })
		e := briefExecutor(t, ExecutorOptions{OS: table, Mounts: table.Specs(), Session: session.Options{Files: &session.Files{}}})
		desc := e.Tool().Description
		assert.Contains(t, desc, "\nFiles: /work is this session's own directory and the working directory (16 MiB, 4096 entries), kept with the session. "+
			"Mounted directories: /data (read-only), /scratch (writable; changes are not saved, up to 1 KiB written). Other paths raise PermissionError.")
		assert.NotContains(t, desc, data)
		assert.NotContains(t, desc, scratch)
		assert.Equal(t, "'data'", mustRun(t, e, "s", "open('/data/a.txt').read()"))
		mustRaise(t, e, "s", "open('/data/b.txt', 'w')", "PermissionError")
		mustRun(t, e, "s", "open('/scratch/b.txt', 'w').write('b')")
		_, err = os.Stat(filepath.Join(scratch, "b.txt"))
		assert.ErrorIs(t, err, os.ErrNotExist, "an overlay's changes do not reach the host")
		mustRaise(t, e, "s", "open('/etc/hostname')", "PermissionError")
	})
	t.Run("unknown handler", func(t *testing.T) {
		// An OS handler without Mounts: nothing is said beyond /work.
		e := briefExecutor(t, ExecutorOptions{OS: vfs.NewMemFS("/tmp")})
		assert.NotContains(t, e.Tool().Description, "Files:")
	})
}

// briefRegistry has functions in two categories (one async), a class, a
// host object and an MCP server's namespace: the sample in docs/agent.md.
func briefRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(
		tools.MustFunc(tools.Schema{Name: "get_weather", Description: "Current weather for a city.\nMade up.", Category: "data",
			Params: []tools.Param{{Name: "city"}, {Name: "units", Default: "metric"}}},
			func(city, units string) (map[string]any, error) { return map[string]any{"city": city}, nil }),
		func() tools.Function {
			f := tools.MustFunc(tools.Schema{Name: "fetch", Description: "Fetch a URL.", Params: []tools.Param{{Name: "url"}}}, func(url string) string { return url })
			f.Async = true
			return f
		}(),
	)
	require.NoError(t, err)
	class, err := tools.NewClass("Account", "A bank account.", (*briefAccount)(nil),
		tools.MustMethod(tools.Schema{Name: "deposit", Description: "Add money.", Params: []tools.Param{{Name: "amount"}}}, (*briefAccount).Deposit))
	require.NoError(t, err)
	require.NoError(t, reg.RegisterClass(class))
	acct, err := reg.ObjectKey(&briefAccount{Owner: "ann"}, "ann")
	require.NoError(t, err)
	require.NoError(t, reg.SetGlobal("acct", acct))

	// A namespace, as package mcpclient offers an MCP server.
	search := tools.Function{
		Schema: tools.Schema{Name: "search", Description: "Search the issues.", Params: []tools.Param{
			{Name: "query", Type: tools.String, Description: "what to look for"},
			{Name: "limit", Type: tools.Integer, Optional: true},
		}},
		Async:   true,
		Handler: func(_ context.Context, a tools.Args) (object.Value, error) { return a["query"], nil },
	}
	require.NoError(t, reg.AddNamespace("tracker", &tools.Class{Name: "tracker", Description: "The issue tracker.", Methods: []tools.Function{search}}, struct{}{}))
	return reg
}

type briefAccount struct {
	Owner   string  `json:"owner"`
	Balance float64 `json:"balance"`
}

func (a *briefAccount) Deposit(amount float64) float64 { a.Balance += amount; return a.Balance }

// The callables appear as stubs, in a fixed order; past the budget by
// name, and past it again counted; and the stubs are how the code calls
// them.
func TestBriefingFunctions(t *testing.T) {
	reg := briefRegistry(t)
	e := briefExecutor(t, ExecutorOptions{Functions: reg, OmitCallResults: true})
	desc := e.Tool().Description
	assert.True(t, strings.HasSuffix(desc, `

Functions (call them directly; await the async ones):
def get_weather(city: str, units: str | None = 'metric') -> dict[str, Any]: ...  # Current weather for a city.
async def fetch(url: str) -> str: ...  # Fetch a URL.
MCP server tracker (its tools are async: await tracker.tool(...)):
async def tracker.search(query: str, limit: int | None = None) -> Any: ...  # Search the issues.
Classes (the host gives you their objects):
class Account:  # A bank account.
    owner: str
    balance: float
    def deposit(self, amount: float) -> float: ...  # Add money.
Predefined names: acct: Account
list_functions() lists them; help('name') shows one in full.`), desc)
	// The stubs are how the code calls them.
	assert.Equal(t, "('Oslo', 'x', 'q', 6.0)", mustRun(t, e, "s",
		"(get_weather('Oslo')['city'], await fetch('x'), await tracker.search(query='q'), acct.deposit(6))"))
	// A function whose required parameter follows an optional one is its
	// overloads, as the type checker's stubs have it.
	between := tools.MustFunc(tools.Schema{Name: "between", Params: []tools.Param{{Name: "lo", Optional: true}, {Name: "hi"}}}, func(lo, hi int) int { return hi - lo })
	assert.Equal(t, "@overload\ndef between(lo: int | None, hi: int) -> int: ...\n@overload\ndef between(*, hi: int) -> int: ...", stubLine(between, "", false))

	small := briefExecutor(t, ExecutorOptions{Functions: reg, OmitCallResults: true, BriefingBudget: estimateTokens(desc) - 1})
	names := small.Tool().Description
	assert.True(t, strings.HasSuffix(names, `

Functions by category ("async": await it):
- data: get_weather
- general: fetch (async)
MCP servers (their tools are async: await ns.tool(...)):
- tracker: search
Classes (the host gives you their objects): Account
Predefined names: acct: Account
list_functions() lists them; help('name') shows one in full.`), names)
	assert.LessOrEqual(t, estimateTokens(names), estimateTokens(desc)-1)

	tiny := briefExecutor(t, ExecutorOptions{Functions: reg, OmitCallResults: true, BriefingBudget: estimateTokens(names) - 1})
	assert.True(t, strings.HasSuffix(tiny.Tool().Description, "\n\nHost functions: data (1 function); general (1 function); "+
		"MCP server tracker (1 async tool: await tracker.tool(...)); 1 class; 1 predefined name. "+
		"list_functions(category) lists them; help() gives an overview and help('name') shows one in full."), tiny.Tool().Description)

	assert.Equal(t, []string{"2 classes", "3 functions"}, []string{count(2, "class"), count(3, "function")})

	unlimited := briefExecutor(t, ExecutorOptions{Functions: reg, OmitCallResults: true, BriefingBudget: -1})
	assert.Equal(t, desc, unlimited.Tool().Description)

	empty, err := tools.NewRegistry()
	require.NoError(t, err)
	none := briefExecutor(t, ExecutorOptions{Functions: empty})
	assert.NotContains(t, none.Tool().Description, "help(")
	assert.NotContains(t, none.Tool().Description, "host function calls")
}

// The description is a function of the configuration: the order in which
// functions are registered or mounts listed does not change it.
func TestBriefingDeterministic(t *testing.T) {
	fns := manyTools(12)
	reversed := make([]tools.Function, len(fns))
	for i, f := range fns {
		reversed[len(fns)-1-i] = f
	}
	a, err := tools.NewRegistry(fns...)
	require.NoError(t, err)
	b, err := tools.NewRegistry(reversed...)
	require.NoError(t, err)
	mounts := []vfs.MountSpec{{Host: "/h/a", Guest: "/a"}, {Host: "/h/b", Guest: "/b", Mode: vfs.MountReadWrite}}
	ea := briefExecutor(t, ExecutorOptions{Functions: a, Mounts: mounts, OS: vfs.NewMemFS("/a")})
	eb := briefExecutor(t, ExecutorOptions{Functions: b, Mounts: []vfs.MountSpec{mounts[1], mounts[0]}, OS: vfs.NewMemFS("/a")})
	assert.Equal(t, ea.Tool().Description, eb.Tool().Description)
	assert.Equal(t, ea.Tool().Description, ea.Tool().Description)
	assert.Contains(t, ea.Tool().Description, "Mounted directories: /a (read-only), /b (read-write).")
}

// manyTools returns n functions in 4 categories, with a description and
// two or three parameters each, as a typical tool set has.
func manyTools(n int) []tools.Function {
	out := make([]tools.Function, n)
	for i := range out {
		params := []tools.Param{{Name: "query", Description: "what to look for"}, {Name: "limit", Default: 10, Description: "at most this many"}}
		if i%2 == 0 {
			params = append(params, tools.Param{Name: "include_archived", Type: tools.Boolean, Optional: true})
		}
		out[i] = tools.Function{
			Schema: tools.Schema{
				Name:        fmt.Sprintf("search_records_%03d", i),
				Description: fmt.Sprintf("Search the records of collection %d and return the matching entries.\nMore detail.", i),
				Category:    []string{"crm", "billing", "support", "inventory"}[i%4],
				Params:      params,
				ReturnType:  tools.Array,
			},
			Handler: func(context.Context, tools.Args) (object.Value, error) { return nil, nil },
			Async:   i%3 == 0,
		}
	}
	return out
}

// The briefing's size for 0, 10 and 100 tools (figures in docs/agent.md):
// within the default budget in every case, with stubs for 10 tools and
// names for 100.
func TestBriefingSize(t *testing.T) {
	for _, n := range []int{0, 10, 100} {
		reg, err := tools.NewRegistry(manyTools(n)...)
		require.NoError(t, err)
		desc := briefExecutor(t, ExecutorOptions{Functions: reg, Session: session.Options{Files: &session.Files{}}}).Tool().Description
		full := briefExecutor(t, ExecutorOptions{Functions: reg, Session: session.Options{Files: &session.Files{}}, BriefingBudget: -1}).Tool().Description
		t.Logf("%3d tools: %5d chars, ~%4d tokens (chars/4: %4d); as stubs: %5d chars, ~%5d tokens",
			n, len(desc), estimateTokens(desc), len(desc)/4, len(full), estimateTokens(full))
		assert.LessOrEqual(t, estimateTokens(desc), DefaultBriefingBudget)
		switch n {
		case 10:
			assert.Equal(t, full, desc, "10 tools fit as stubs")
		case 100:
			assert.Contains(t, desc, "\n- billing: search_records_001, search_records_005, search_records_009 (async),", "100 tools are listed by name")
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"interpreter", 2},            // 11 letters: two pieces of at most 6
		{"get_weather(city: str)", 7}, // get_weather, (, city, :, str, )
		{"1234567", 3},                // digits in threes
		{"a\n    b", 3},               // the line break counts, the indentation not
		{"café", 2},                   // caf, é
	} {
		assert.Equal(t, c.want, estimateTokens(c.s), c.s)
	}
}
