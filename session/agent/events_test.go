package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/tools"
)

// collector gathers events; async host calls report from other goroutines.
type collector struct {
	mu     sync.Mutex
	events []agent.Event
}

func (c *collector) add(e agent.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// brief renders events compactly for comparison.
func brief(events []agent.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		s := string(e.Type)
		switch e.Type {
		case agent.TextStart:
			s += " " + e.MessageID + " " + e.Stream.String()
		case agent.TextContent:
			s += fmt.Sprintf(" %s %q", e.MessageID, e.Delta)
		case agent.TextEnd:
			s += " " + e.MessageID
		case agent.StepStarted, agent.StepFinished:
			s += " " + e.StepName + " " + e.ToolName
		case agent.ToolCallStart:
			s += " " + e.ToolCallID + " " + e.ToolName
		case agent.ToolCallArgs:
			s += " " + e.ToolCallID + " " + e.Delta
		case agent.ToolCallEnd:
			s += " " + e.ToolCallID
		case agent.ToolCallResult:
			s += fmt.Sprintf(" %s %s error=%v", e.ToolCallID, e.Result, e.IsError)
		case agent.RunFinished:
			s += " " + object.Repr(e.Value)
		case agent.RunError:
			s += " " + e.Err.Error()
		}
		out[i] = s
	}
	return out
}

func TestRunEvents(t *testing.T) {
	reg := agenttest.Functions(t)
	s := agenttest.OpenSession(t, reg)
	var c collector
	res, err := agent.Run(context.Background(), s, "r1", `import sys
print('hello')
print('world')
w = get_weather('Oslo')
print('warn', file=sys.stderr)
print('temp', w['temp_c'])
try:
    lookup('k')
except KeyError:
    pass
add(1, 2) + 1`, c.add)
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, "hello\nworld\nwarn\ntemp 21.5\n", res.Output)
	assert.Equal(t, []string{
		"run_started",
		"text_start r1-msg-1 stdout",
		`text_content r1-msg-1 "hello\n"`,
		`text_content r1-msg-1 "world\n"`,
		"text_end r1-msg-1",
		"step_started r1-call-1 get_weather",
		"tool_call_start r1-call-1 get_weather",
		`tool_call_args r1-call-1 {"city":"Oslo","units":"metric"}`,
		"tool_call_end r1-call-1",
		`tool_call_result r1-call-1 {"city":"Oslo","temp_c":21.5,"units":"metric"} error=false`,
		"step_finished r1-call-1 get_weather",
		"text_start r1-msg-2 stderr",
		`text_content r1-msg-2 "warn\n"`,
		"text_end r1-msg-2",
		"text_start r1-msg-3 stdout",
		`text_content r1-msg-3 "temp 21.5\n"`,
		"text_end r1-msg-3",
		"step_started r1-call-2 lookup",
		"tool_call_start r1-call-2 lookup",
		`tool_call_args r1-call-2 {"key":"k"}`,
		"tool_call_end r1-call-2",
		`tool_call_result r1-call-2 KeyError: no such key "k" error=true`,
		"step_finished r1-call-2 lookup",
		"step_started r1-call-3 add",
		"tool_call_start r1-call-3 add",
		`tool_call_args r1-call-3 {"a":1,"b":2}`,
		"tool_call_end r1-call-3",
		"tool_call_result r1-call-3 3 error=false",
		"step_finished r1-call-3 add",
		"run_finished 4",
	}, brief(c.events))
	for i, e := range c.events {
		assert.Equal(t, i+1, e.Seq)
		assert.Equal(t, "r1", e.RunID)
		assert.False(t, e.Time.IsZero())
		if i > 0 {
			assert.False(t, e.Time.Before(c.events[i-1].Time))
		}
	}
	assert.Equal(t, object.Int(3), c.events[27].Value, "tool result carries the value")
}

func TestRunEventsError(t *testing.T) {
	s := agenttest.OpenSession(t, agenttest.Functions(t))
	var c collector
	res, err := agent.Run(context.Background(), s, "", "print('a')\nget_weather(city=3)", c.add)
	require.NoError(t, err)
	require.NotNil(t, res.Err)
	got := brief(c.events)
	runID := c.events[0].RunID
	assert.True(t, strings.HasPrefix(runID, "run-"), runID)
	assert.Equal(t, []string{
		"run_started",
		"text_start " + runID + "-msg-1 stdout",
		`text_content ` + runID + `-msg-1 "a\n"`,
		"text_end " + runID + "-msg-1",
		"step_started " + runID + "-call-1 get_weather",
		"tool_call_start " + runID + "-call-1 get_weather",
		`tool_call_args ` + runID + `-call-1 {"args":[],"kwargs":{"city":3}}`,
		"tool_call_end " + runID + "-call-1",
		"tool_call_result " + runID + "-call-1 TypeError: get_weather() argument 'city' must be str, not int error=true",
		"step_finished " + runID + "-call-1 get_weather",
		"run_error TypeError: get_weather() argument 'city' must be str, not int",
	}, got)
	var pyErr *runtime.Error
	require.ErrorAs(t, c.events[len(c.events)-1].Err, &pyErr)
	assert.Equal(t, "TypeError", pyErr.Type)

	// A session failure (here: a cancelled context) ends the stream with
	// RunError and is returned.
	c = collector{}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = agent.Run(ctx, s, "r3", "while True:\n    pass", c.add)
	require.ErrorIs(t, err, runtime.ErrCancelled)
	last := c.events[len(c.events)-1]
	assert.Equal(t, agent.RunError, last.Type)
	assert.True(t, errors.Is(last.Err, context.DeadlineExceeded))
}

// Async calls gathered concurrently each report step start, start, args
// and end together, and a result and step end when they finish.
func TestAsyncGatherEvents(t *testing.T) {
	s := agenttest.OpenSession(t, agenttest.Functions(t))
	var c collector
	start := time.Now()
	res, err := agent.Run(context.Background(), s, "g", `import asyncio
async def main():
    return await asyncio.gather(fetch('a'), fetch('b'), fetch('c'))
await main()`, c.add)
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, "['doc:a', 'doc:b', 'doc:c']", object.Repr(res.Value))
	assert.Less(t, elapsed, 290*time.Millisecond, "three 100 ms calls ran concurrently (one after the other: 300 ms)")
	assert.GreaterOrEqual(t, elapsed, 100*time.Millisecond)

	got := brief(c.events)
	require.Len(t, got, 20)
	assert.Equal(t, "run_started", got[0])
	assert.Equal(t, "run_finished ['doc:a', 'doc:b', 'doc:c']", got[19])
	calls := map[string][]string{}
	for _, e := range c.events[1:19] {
		calls[e.ToolCallID] = append(calls[e.ToolCallID], string(e.Type))
	}
	require.Len(t, calls, 3)
	for id, types := range calls {
		assert.Equal(t, []string{"step_started", "tool_call_start", "tool_call_args", "tool_call_end", "tool_call_result", "step_finished"}, types, id)
	}
}

// TestAsyncCallsLeftBehind ends runs while async calls are still running
// (a gather that fails early, a call never awaited): the stream still ends
// with the run's last event and nothing arrives after Run returned.
func TestAsyncCallsLeftBehind(t *testing.T) {
	for name, code := range map[string]string{
		"gather fails early": "import asyncio\nasync def boom():\n    raise ValueError('early')\nawait asyncio.gather(fetch('slow', 300), boom())",
		"never awaited":      "x = fetch('slow', 300)\n'done'",
	} {
		t.Run(name, func(t *testing.T) {
			s := agenttest.OpenSession(t, agenttest.Functions(t))
			var c collector
			_, err := agent.Run(context.Background(), s, "left", code, c.add)
			require.NoError(t, err)
			c.mu.Lock()
			n := len(c.events)
			last := c.events[n-1].Type
			c.mu.Unlock()
			assert.Contains(t, []agent.EventType{agent.RunFinished, agent.RunError}, last)
			// The left-behind call's step is finished before the run's
			// last event, without a result.
			open := map[string]bool{}
			for _, e := range c.events[:n-1] {
				switch e.Type {
				case agent.StepStarted:
					open[e.StepName] = true
				case agent.StepFinished:
					assert.True(t, open[e.StepName], "step %s finished but not started", e.StepName)
					delete(open, e.StepName)
				}
			}
			assert.Empty(t, open, "steps still open at the run's end")
			time.Sleep(500 * time.Millisecond) // longer than the left-behind call
			c.mu.Lock()
			defer c.mu.Unlock()
			assert.Len(t, c.events, n, "events after the run returned: %v", brief(c.events[n:]))
		})
	}
}

// Without an event stream the host functions still work; help returns its
// text instead of printing it.
func TestRegistryHostWithoutEvents(t *testing.T) {
	s := agenttest.OpenSession(t, agenttest.Functions(t))
	res, err := s.Exec(context.Background(), "add(40, 2)")
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), res.Value)
	res, err = s.Exec(context.Background(), "help('add')")
	require.NoError(t, err)
	assert.Equal(t, object.Str("add(a: int, b: int = None)\n\n    Add two integers.\n\n    Args:\n        a (required)\n        b"), res.Value)
}

// A Recorder reports a run its caller drives: here code with inputs, and
// calls the caller reports itself.
func TestRecorder(t *testing.T) {
	s := agenttest.OpenSession(t, agenttest.Functions(t))
	var c collector
	rec, ctx := agent.NewRecorder(context.Background(), "rr", c.add)
	assert.Equal(t, "rr", rec.RunID())
	res, err := s.ExecWith(ctx, "print(n)\nadd(n, 1)", runtime.Input{Name: "n", Value: object.Int(41)})
	require.NoError(t, err)
	// A call the caller answers itself (a client tool), and one it leaves
	// unanswered: its step finishes with the run.
	id := rec.ToolCall("ask", `{"q":"name?"}`)
	rec.ToolResult(id, object.Str("Ada"), nil)
	id2 := rec.ToolCall("approve", `{}`)
	rec.Finish(res.Value, nil)
	rec.Finish(nil, errors.New("ignored: the stream has ended"))
	rec.ToolResult(id2, object.Bool(true), nil) // too late: dropped
	assert.Equal(t, "41\n", rec.Output())
	assert.Equal(t, []string{
		"run_started",
		"text_start rr-msg-1 stdout",
		`text_content rr-msg-1 "41\n"`,
		"text_end rr-msg-1",
		"step_started rr-call-1 add",
		"tool_call_start rr-call-1 add",
		`tool_call_args rr-call-1 {"a":41,"b":1}`,
		"tool_call_end rr-call-1",
		"tool_call_result rr-call-1 42 error=false",
		"step_finished rr-call-1 add",
		"step_started rr-call-2 ask",
		"tool_call_start rr-call-2 ask",
		`tool_call_args rr-call-2 {"q":"name?"}`,
		"tool_call_end rr-call-2",
		`tool_call_result rr-call-2 "Ada" error=false`,
		"step_finished rr-call-2 ask",
		"step_started rr-call-3 approve",
		"tool_call_start rr-call-3 approve",
		"tool_call_args rr-call-3 {}",
		"tool_call_end rr-call-3",
		"step_finished rr-call-3 approve",
		"run_finished 42",
	}, brief(c.events))
}

// The executor's text has each host call's result, in order with the
// print output, as the seed's executor collects it (unless omitted).
func TestExecutorCallResults(t *testing.T) {
	big := tools.MustFunc(tools.Schema{Name: "big"}, func() string { return strings.Repeat("é", 3000) })
	reg := agenttest.Functions(t)
	require.NoError(t, reg.Register(big))
	e := agenttest.NewExecutorWith(t, agent.ExecutorOptions{Functions: reg})
	assert.Contains(t, e.Tool().Description, "what each host function call returned")
	res := agenttest.Execute(t, e, "t", `print('start', end='')
w = get_weather('Oslo')
print('temp', w['temp_c'])
try:
    lookup('k')
except KeyError:
    pass
add(1, 2)`)
	require.NoError(t, res.Err)
	assert.Equal(t, `start
[get_weather returned {"city":"Oslo","temp_c":21.5,"units":"metric"}]
temp 21.5
[lookup raised KeyError: no such key "k"]
[add returned 3]
3`, res.Text)
	assert.Equal(t, "starttemp 21.5\n", res.Output, "Output stays the print output")

	// A long result is cut, on a character boundary, saying how much.
	res = agenttest.Execute(t, e, "t", "x = big()")
	require.NoError(t, res.Err)
	assert.True(t, strings.HasPrefix(res.Text, `[big returned "éé`), res.Text)
	assert.True(t, strings.HasSuffix(res.Text, "… (3955 more bytes)]"), res.Text)
	assert.True(t, utf8.ValidString(res.Text))

	// A failing call: the results before the failure, then the traceback.
	res = agenttest.Execute(t, e, "t", "add(2, 2)\nget_weather(3)")
	require.Error(t, res.Err)
	assert.True(t, strings.HasPrefix(res.Text, "[add returned 4]\n[get_weather raised TypeError: get_weather() argument 'city' must be str, not int]\nTraceback"), res.Text)

	// Omitted, the text is the print output and the value.
	plain := agenttest.NewExecutorWith(t, agent.ExecutorOptions{OmitCallResults: true})
	assert.Equal(t, "3", agenttest.OK(t, plain, "t", "add(1, 2)"))
	assert.NotContains(t, plain.Tool().Description, "what each host function call returned")
}
