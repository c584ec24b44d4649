package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
	"github.com/monty-go/monty/session/tools"
)

func TestExecuteConversation(t *testing.T) {
	st := memstore.New(memstore.Options{})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	res := agenttest.Execute(t, e, "thread-1", "def c_to_f(c):\n    return c * 9 / 5 + 32\nprint('defined')")
	require.NoError(t, res.Err)
	assert.Equal(t, "defined", res.Text)
	assert.Equal(t, "defined\n", res.Output)
	assert.Equal(t, "", res.SessionID) // the conversation's own session
	assert.Equal(t, "thread-1", res.StoreID)
	assert.True(t, res.Saved)
	assert.NotEmpty(t, res.StateHash)

	res = agenttest.Execute(t, e, "thread-1", "w = get_weather('Oslo')\nprint(w['city'])\nc_to_f(w['temp_c'])")
	require.NoError(t, res.Err)
	assert.Equal(t, "Oslo\n70.7", res.Text)
	assert.Equal(t, object.Float(70.7), res.Value)
	assert.Equal(t, "70.7", res.Repr)

	// Another thread has its own session.
	res = agenttest.Execute(t, e, "thread-2", "c_to_f(0)")
	assert.Contains(t, res.Text, "NameError: name 'c_to_f' is not defined")
	assert.Equal(t, "NameError", res.ErrorType)

	// A named session within a thread is separate too, and persisted.
	res, err := e.Execute(context.Background(), "thread-1", json.RawMessage(`{"code": "x = 5", "session_id": "scratch"}`))
	require.NoError(t, err)
	assert.Equal(t, "scratch", res.SessionID) // as the caller named it
	assert.Equal(t, "thread-1/scratch", res.StoreID)

	// A new executor over the same store continues every session.
	e2 := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	assert.Equal(t, "212.0", agenttest.OK(t, e2, "thread-1", "c_to_f(100)"))
	res, err = e2.Execute(context.Background(), "thread-1", json.RawMessage(`{"code": "x", "session_id": "scratch"}`))
	require.NoError(t, err)
	assert.Equal(t, "5", res.Text)

	// Structured result for callers that want JSON.
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, "5", m["result"])
	assert.Equal(t, "scratch", m["session_id"])
	assert.NotContains(t, m, "run_id") // only a paused run has one to give
}

func TestExecuteBadArgs(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	for name, c := range map[string]struct {
		thread string
		args   string
	}{
		"not json":        {"t", `{`},
		"not an object":   {"t", `"print(1)"`},
		"no code":         {"t", `{}`},
		"code not string": {"t", `{"code": 1}`},
		"session type":    {"t", `{"code": "1", "session_id": 2}`},
		"no ids":          {"", `{"code": "1"}`},
		"slash":           {"t", `{"code": "1", "session_id": "../x"}`},
		"bad id":          {"t", `{"code": "1", "session_id": "a b"}`},
		"bad thread":      {"..", `{"code": "1"}`},
		"thread with /":   {"a/b", `{"code": "1"}`}, // would share thread "a"'s session "b"
	} {
		_, err := e.Execute(context.Background(), c.thread, json.RawMessage(c.args))
		assert.ErrorIs(t, err, agent.ErrBadArgs, name)
		var argsErr *agent.ArgsError
		if assert.ErrorAs(t, err, &argsErr, name) {
			assert.Equal(t, agent.ToolName, argsErr.Tool, name)
			assert.True(t, strings.HasPrefix(err.Error(), "agent: bad execute_python arguments: "), err.Error())
		}
	}
	require.ErrorIs(t, e.Reset(context.Background(), "", ""), agent.ErrBadArgs)
	// Without a thread key, session_id alone names the session.
	res, err := e.Execute(context.Background(), "", json.RawMessage(`{"code": "1 + 1", "session_id": "mcp-1"}`))
	require.NoError(t, err)
	assert.Equal(t, "mcp-1", res.SessionID)
	assert.Equal(t, "mcp-1", res.StoreID)
	assert.Equal(t, "2", res.Text)
}

func TestToolDefinition(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	tool := e.Tool()
	assert.Equal(t, "execute_python", tool.Name)
	assert.JSONEq(t, `{"type":"object","properties":{
		"code":{"type":"string","description":"Python source code to execute"},
		"session_id":{"type":"string","description":"Optional name of a separate session within this conversation (letters, digits and . _ - :); omit it to use the conversation's session"},
		"type_check":{"type":"boolean","description":"Type-check the code against the available functions and this session's earlier code before running it; if the check finds problems, nothing runs and they are returned (default: false)"},
		"client_tools":{"type":"array","description":"Functions the code may call that you answer yourself (for example your other tools): a call pauses the run and the result lists the calls; answer them with resume_python. With async true a call is awaitable, so asyncio.gather pauses once for several.",
			"items":{"type":"object","properties":{"name":{"type":"string"},"async":{"type":"boolean"}},"required":["name"]}},
		"idempotency_key":{"type":"string","description":"Optional: a new unique key (such as a UUID) for this call; send the same key with the same arguments only to retry the call after its answer was lost, and the first answer comes back without running the code again"}},
		"required":["code"]}`, string(tool.Parameters))
	var resume map[string]any
	require.NoError(t, json.Unmarshal(e.ResumeTool().Parameters, &resume), "resume_python's schema is JSON")
	assert.Equal(t, []any{"run_id", "results"}, resume["required"])
	assert.Contains(t, tool.Description, "sandboxed")
	assert.Contains(t, tool.Description, "\ndef get_weather(city: str, units: str | None = 'metric') -> dict[str, Any]: ...  # Current weather for a city.\n")
	assert.Contains(t, tool.Description, "help('name')")

	none := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: mustRegistry(t)})
	assert.NotContains(t, none.Tool().Description, "help(")
}

func mustRegistry(t testing.TB, fns ...tools.Function) *tools.Registry {
	reg, err := tools.NewRegistry(fns...)
	require.NoError(t, err)
	return reg
}

func TestIntrospection(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	assert.Equal(t, "['fetch', 'get_weather', 'lookup', 'add', 'wait_ms']", agenttest.OK(t, e, "i", "[f['name'] for f in list_functions()]"))
	assert.Equal(t, "[{'name': 'add', 'category': 'math', 'signature': 'add(a: int, b: int = None)', 'description': 'Add two integers.'}]",
		agenttest.OK(t, e, "i", "list_functions('math')"))
	assert.Equal(t, "[]", agenttest.OK(t, e, "i", "list_functions(category='none')"))

	// help prints, like CPython's, and returns None.
	res := agenttest.Execute(t, e, "i", "help('get_weather')")
	assert.Equal(t, "get_weather(city: str, units: str = 'metric')\n\n    Current weather for a city.\n    Data is made up.\n\n    Args:\n        city (required): city name\n        units: metric or imperial\n\n    Returns:\n        a dict with city, temp_c and units", res.Text)
	assert.Nil(t, res.Err)
	assert.Equal(t, `Host functions (call them like Python functions; help('name') shows one in full):

data:
    fetch(key: str, delay_ms: int = 100)
        Fetch a document after a delay.
    get_weather(city: str, units: str = 'metric')
        Current weather for a city.
    lookup(key: str)
        Look a key up.

math:
    add(a: int, b: int = None)
        Add two integers.

time:
    wait_ms(ms: int)
        Block for a while.`, agenttest.OK(t, e, "i", "help()"))
	res = agenttest.Execute(t, e, "i", "help('nope')")
	assert.Contains(t, res.Text, `ValueError: no host function or class named "nope"; help() lists them`)

	// Introspection calls are not tool calls in the event stream.
	var c collector
	_, err := e.ExecuteEvents(context.Background(), "i", agenttest.CodeArgs("help('add')\nlist_functions()\nNone"), c.add)
	require.NoError(t, err)
	for _, ev := range c.events {
		assert.NotContains(t, string(ev.Type), "tool_call")
	}

	empty := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: mustRegistry(t)})
	assert.Equal(t, "No host functions are available.", agenttest.OK(t, empty, "i", "help()"))
	assert.Equal(t, "[]", agenttest.OK(t, empty, "i", "list_functions()"))
}

func TestExecuteAsyncGather(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	agenttest.OK(t, e, "a", "import asyncio") // warm the session
	start := time.Now()
	res := agenttest.Execute(t, e, "a", "import asyncio\nawait asyncio.gather(fetch('x'), fetch('y'), fetch('z'))")
	elapsed := time.Since(start)
	require.NoError(t, res.Err, res.Text)
	assert.Equal(t, "['doc:x', 'doc:y', 'doc:z']", res.Text)
	assert.Less(t, elapsed, 290*time.Millisecond, "three 100 ms calls ran concurrently (one after the other: 300 ms)")
}

func TestExecuteTimeout(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxDuration: 300 * time.Millisecond}}})
	agenttest.OK(t, e, "slow", "x = 1\ndef f():\n    return x * 10")
	for _, code := range []string{
		"x = 2\nwhile True:\n    pass",                            // Python loops
		"x = 2\nwait_ms(60000)",                                   // a host call that outlasts the timeout
		"import asyncio\nx = 2\nawait fetch('k', delay_ms=60000)", // an async one
		"import time\nx = 2\ntime.sleep(60)",
	} {
		start := time.Now()
		res := agenttest.Execute(t, e, "slow", code)
		assert.Less(t, time.Since(start), 2*time.Second, code)
		require.ErrorIs(t, res.Err, agent.ErrTimeout, code)
		assert.Equal(t, "TimeoutError", res.ErrorType)
		assert.Equal(t, "TimeoutError: the code ran longer than 300ms and was stopped; the session was left as it was before this call", res.Text)
		// The session is usable and as it was before the call.
		assert.Equal(t, "10", agenttest.OK(t, e, "slow", "f()"), code)
	}
}

func TestExecuteMemoryLimit(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	agenttest.OK(t, e, "mem", "keep = 'ok'")
	res := agenttest.Execute(t, e, "mem", "x = []\nwhile True:\n    x.append('y' * 10000)")
	require.ErrorIs(t, res.Err, runtime.ErrMemoryLimit)
	assert.Equal(t, "MemoryError", res.ErrorType)
	assert.Contains(t, res.Text, "MemoryError")
	assert.Equal(t, "'ok'", agenttest.OK(t, e, "mem", "keep"))
	// 16 MB is the default: a few MB are fine.
	assert.Equal(t, "4000000", agenttest.OK(t, e, "mem", "len('a' * 4000000)"))

	// Limits can be raised.
	big := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxMemory: 64 << 20}}})
	assert.Equal(t, "30000000", agenttest.OK(t, big, "mem", "len('a' * 30000000)"))
	res = agenttest.Execute(t, e, "mem", "len('a' * 30000000)")
	require.ErrorIs(t, res.Err, runtime.ErrMemoryLimit)
}

func TestExecuteHostCallLimits(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxHostCalls: 5}}})
	agenttest.OK(t, e, "lim", "n = 0")
	assert.Equal(t, "5", agenttest.OK(t, e, "lim", "for i in range(5):\n    add(1)\nn = 5\nn"))
	res := agenttest.Execute(t, e, "lim", "n = 6\nfor i in range(6):\n    add(1)")
	require.ErrorIs(t, res.Err, runtime.ErrHostCallLimit)
	assert.Equal(t, "RuntimeError: host call limit exceeded: more than 5 host calls in one run; the session was left as it was before this call", res.Text)
	assert.Equal(t, "5", agenttest.OK(t, e, "lim", "n"), "the limited run was rolled back")

	// Total time in host calls.
	e = agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxHostTime: 150 * time.Millisecond}}})
	assert.Equal(t, "100", agenttest.OK(t, e, "lim", "wait_ms(100)"))
	res = agenttest.Execute(t, e, "lim", "wait_ms(100)\nwait_ms(100)")
	require.ErrorIs(t, res.Err, runtime.ErrHostCallLimit)
	assert.Contains(t, res.Text, "host calls took longer than 150ms in total")

	// The default bound is 1000 calls.
	e = agenttest.NewExecutor(t, agent.ExecutorOptions{})
	res = agenttest.Execute(t, e, "lim", "for i in range(1001):\n    add(1)")
	require.ErrorIs(t, res.Err, runtime.ErrHostCallLimit)
	assert.Contains(t, res.Text, "more than 1000 host calls")
}

// Two calls on one thread never interleave: the second waits its turn.
// Calls on different threads run in parallel.
func TestExecuteConcurrency(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	agenttest.OK(t, e, "same", "log = []")
	agenttest.OK(t, e, "other", "import time")
	var wg sync.WaitGroup
	results := make([]string, 4)
	start := time.Now()
	for i, c := range []struct{ thread, code string }{
		{"same", "import time\nlog.append('a1')\ntime.sleep(0.2)\nlog.append('a2')\nlog"},
		{"same", "import time\nlog.append('b1')\ntime.sleep(0.2)\nlog.append('b2')\nlog"},
		{"other", "time.sleep(0.2)\n'other'"},
		{"third", "import time\ntime.sleep(0.2)\n'third'"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Execute(context.Background(), c.thread, agenttest.CodeArgs(c.code))
			if assert.NoError(t, err) && assert.NoError(t, res.Err) {
				results[i] = res.Text
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Whichever ran first, the other saw its complete log.
	assert.Contains(t, []string{
		"['a1', 'a2', 'b1', 'b2']",
		"['b1', 'b2', 'a1', 'a2']",
	}, agenttest.OK(t, e, "same", "log"))
	assert.ElementsMatch(t, []string{"'other'", "'third'"}, results[2:])
	assert.Less(t, elapsed, 700*time.Millisecond, "the threads ran in parallel (the same-thread pair takes 400 ms)")
	assert.GreaterOrEqual(t, elapsed, 400*time.Millisecond, "the same-thread calls ran one after the other")

	// A waiting call gives up when its context ends.
	release := make(chan struct{})
	blocker := tools.MustFunc(tools.Schema{Name: "block"}, func() { <-release })
	e = agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: mustRegistry(t, blocker)})
	done := make(chan struct{})
	go func() {
		defer close(done)
		agenttest.OK(t, e, "q", "block()\n'first'")
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := e.Execute(ctx, "q", agenttest.CodeArgs("1"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waiting for session q")
	close(release)
	<-done
	assert.Equal(t, "2", agenttest.OK(t, e, "q", "1 + 1"))
}

// The caller cancelling a running call is an error (not a result), and the
// session is fine afterwards.
func TestExecuteCancelled(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Limits: runtime.Limits{MaxDuration: runtime.Unlimited}}})
	agenttest.OK(t, e, "c", "x = 1")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var c collector
	res, err := e.ExecuteEvents(ctx, "c", agenttest.CodeArgs("x = 2\nwhile True:\n    pass"), c.add)
	require.ErrorIs(t, err, runtime.ErrCancelled)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, res)
	assert.Equal(t, agent.RunError, c.events[len(c.events)-1].Type)
	assert.Equal(t, "1", agenttest.OK(t, e, "c", "x"))
}

func TestReset(t *testing.T) {
	st := memstore.New(memstore.Options{})
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	agenttest.OK(t, e, "r", "x = 1")
	_, err := e.Execute(context.Background(), "r", json.RawMessage(`{"code": "y = 2", "session_id": "s"}`))
	require.NoError(t, err)
	require.NoError(t, e.Reset(context.Background(), "r", ""))
	assert.Contains(t, agenttest.Execute(t, e, "r", "x").Text, "NameError")
	// Only that session was reset.
	res, err := e.Execute(context.Background(), "r", json.RawMessage(`{"code": "y", "session_id": "s"}`))
	require.NoError(t, err)
	assert.Equal(t, "2", res.Text)
	require.NoError(t, e.Reset(context.Background(), "r", "s"))
	res, err = e.Execute(context.Background(), "r", json.RawMessage(`{"code": "y", "session_id": "s"}`))
	require.NoError(t, err)
	assert.Contains(t, res.Text, "NameError")
	// Reset is persisted: another executor on the store sees it.
	e2 := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}})
	assert.Contains(t, agenttest.Execute(t, e2, "r", "x").Text, "NameError")
}

// TestResetUnloadableSession stores a blob that cannot be loaded under a
// conversation: with FailOnCorruptState calls fail, reset_session repairs
// it (the blob's copy kept aside stays, once).
func TestResetUnloadableSession(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	_, err := st.Put(ctx, "broken", []byte("not a session blob"), store.Cond{})
	require.NoError(t, err)
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: st}, FailOnCorruptState: true})
	for range 2 {
		_, err = e.Execute(ctx, "broken", agenttest.CodeArgs("1"))
		require.ErrorIs(t, err, session.ErrCorrupt)
	}
	require.NoError(t, e.Reset(ctx, "broken", ""))
	assert.Equal(t, "2", agenttest.OK(t, e, "broken", "1 + 1"))
	list, err := st.List(ctx)
	require.NoError(t, err)
	var copies int
	for _, in := range list {
		if strings.HasPrefix(in.ID, "broken.corrupt.") {
			copies++
		}
	}
	assert.Equal(t, 1, copies)
}

func TestExecutorClosedAndOptions(t *testing.T) {
	_, err := agent.NewExecutor(agent.ExecutorOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Keeper is required")
	_, err = agent.NewExecutor(agent.ExecutorOptions{Keeper: agenttest.Keeper(t, nil)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Store is required")

	keeper := agenttest.Keeper(t, memstore.New(memstore.Options{}))
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Keeper: keeper})
	keeper.Close()
	_, err = e.Execute(context.Background(), "t", agenttest.CodeArgs("1"))
	require.ErrorIs(t, err, session.ErrClosed)
	require.True(t, errors.Is(e.Reset(context.Background(), "t", ""), session.ErrClosed))
}

// TestExecuteNotSaved goes over the session size cap: the model is told the
// state was not saved, and the call's variables are gone.
func TestExecuteNotSaved(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Session: session.Options{Store: memstore.New(memstore.Options{}), MaxStateSize: 32 << 10}})
	agenttest.OK(t, e, "cap", "keep = 1")
	res := agenttest.Execute(t, e, "cap", "import random\nbig = [random.random() for i in range(10000)]\nlen(big)")
	assert.False(t, res.Saved)
	assert.Contains(t, res.NotSaved, "limit")
	assert.True(t, strings.HasPrefix(res.Text, "10000\nNote: the session was not saved ("), res.Text)
	assert.Contains(t, agenttest.Execute(t, e, "cap", "big").Text, "NameError")
	assert.Equal(t, "1", agenttest.OK(t, e, "cap", "keep"))
}

func TestExecuteOutput(t *testing.T) {
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{})
	assert.Equal(t, "", agenttest.OK(t, e, "o", "x = 1"))
	assert.Equal(t, "", agenttest.OK(t, e, "o", "None"))
	assert.Equal(t, "a\nb\n'v'", agenttest.OK(t, e, "o", "import sys\nprint('a')\nprint('b', file=sys.stderr)\n'v'"))
	res := agenttest.Execute(t, e, "o", "print('before')\n1/0")
	assert.True(t, strings.HasPrefix(res.Text, "before\nTraceback (most recent call last):\n"), res.Text)
	assert.True(t, strings.HasSuffix(res.Text, "ZeroDivisionError: division by zero"), res.Text)
	assert.Equal(t, "before\n", res.Output)
	var pyErr *runtime.Error
	require.ErrorAs(t, res.Err, &pyErr)
	assert.Equal(t, 2, pyErr.Line())
}

// TestCallsQueueAcrossExecutors: two executors (two instances) on one
// store claim a thread's session in the store: the second's call waits
// for the first's to end, then runs on the state it left.
func TestCallsQueueAcrossExecutors(t *testing.T) {
	gate := agenttest.NewGate(t)
	st := memstore.New(memstore.Options{})
	a := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: gate.Registry, Session: session.Options{Store: st}})
	b := agenttest.NewExecutor(t, agent.ExecutorOptions{Functions: gate.Registry, Session: session.Options{Store: st}})
	first := make(chan *agent.Result, 1)
	go func() { first <- agenttest.Execute(t, a, "t", "gate()\nn = 1\nn") }()
	<-gate.Entered
	second := make(chan *agent.Result, 1)
	go func() { second <- agenttest.Execute(t, b, "t", "n + 1") }()
	select {
	case res := <-second:
		t.Fatalf("ran beside the first call: %s", res.Text)
	case <-time.After(300 * time.Millisecond): // it waits on the claim in the store
	}
	gate.Release()
	assert.Equal(t, "1", (<-first).Text)
	assert.Equal(t, "2", (<-second).Text, "ran after the first, on its state")
}

// TestLostClaimStopsTheCall: a call whose claim in the store lapses (the
// store refuses writes, so it cannot be renewed) stops, and its error says
// the claim was lost and the store is unavailable (retry), not that a
// context was cancelled.
func TestLostClaimStopsTheCall(t *testing.T) {
	gate := agenttest.NewGate(t)
	st := storetest.NewRefusing(memstore.New(memstore.Options{}))
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{LeaseTTL: 300 * time.Millisecond})
	defer keeper.Close()
	e := agenttest.NewExecutor(t, agent.ExecutorOptions{Keeper: keeper, Functions: gate.Registry})
	go func() { <-gate.Entered; st.Refuse(true) }()
	res, err := e.Execute(context.Background(), "t", json.RawMessage(agenttest.Args("gate()")))
	require.Error(t, err, "a call whose claim was lost does not answer: %+v", res)
	assert.ErrorIs(t, err, session.ErrLeaseLost)
	assert.ErrorIs(t, err, store.ErrUnavailable)
	assert.NotContains(t, err.Error(), "context canceled")
	select {
	case cause := <-gate.Stopped:
		assert.ErrorIs(t, cause, session.ErrLeaseLost, "the host function saw why it was stopped")
	case <-time.After(10 * time.Second):
		t.Fatal("the host function was not stopped")
	}
}
