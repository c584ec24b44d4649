package agui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agui"
	"github.com/monty-go/monty/session/agui/aguitest"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

var at = time.UnixMilli(1700000000123)

// Every agent event kind maps to the AG-UI event JSON the protocol defines
// (checked against the shapes written out in package aguitest too).
func TestConvertEveryKind(t *testing.T) {
	a := agui.Adapter{ThreadID: "thread-1", RunID: "run-9", ParentMessageID: "msg-assistant"}
	kinds := map[string]bool{}
	for _, c := range []struct {
		in   agent.Event
		want string
	}{
		{agent.Event{Type: agent.RunStarted, RunID: "r", Time: at},
			`{"type":"RUN_STARTED","timestamp":1700000000123,"threadId":"thread-1","runId":"run-9","protocolVersion":"1.0"}`},
		{agent.Event{Type: agent.RunFinished, Value: object.Dict{{Key: object.Str("a"), Value: object.List{object.Int(1)}}}, Time: at},
			`{"type":"RUN_FINISHED","timestamp":1700000000123,"threadId":"thread-1","runId":"run-9","result":{"a":[1]}}`},
		{agent.Event{Type: agent.RunFinished, Value: object.None{}, Time: at},
			`{"type":"RUN_FINISHED","timestamp":1700000000123,"threadId":"thread-1","runId":"run-9"}`},
		{agent.Event{Type: agent.RunFinished, Value: object.Set{object.Int(1)}, Time: at},
			`{"type":"RUN_FINISHED","timestamp":1700000000123,"threadId":"thread-1","runId":"run-9","result":"{1}"}`},
		{agent.Event{Type: agent.RunError, Err: &runtime.Error{Type: "ValueError", Message: "bad", HasMessage: true}, Time: at},
			`{"type":"RUN_ERROR","timestamp":1700000000123,"message":"ValueError: bad","code":"ValueError"}`},
		{agent.Event{Type: agent.RunError, Err: errors.New("store down"), Time: at},
			`{"type":"RUN_ERROR","timestamp":1700000000123,"message":"store down"}`},
		{agent.Event{Type: agent.StepStarted, StepName: "c1", ToolCallID: "c1", ToolName: "get_weather", Time: at},
			`{"type":"STEP_STARTED","timestamp":1700000000123,"stepName":"c1"}`},
		{agent.Event{Type: agent.StepFinished, StepName: "c1", ToolCallID: "c1", ToolName: "get_weather", Time: at},
			`{"type":"STEP_FINISHED","timestamp":1700000000123,"stepName":"c1"}`},
		{agent.Event{Type: agent.TextStart, MessageID: "m1", Stream: runtime.Stderr, Time: at},
			`{"type":"TEXT_MESSAGE_START","timestamp":1700000000123,"messageId":"m1","role":"assistant"}`},
		{agent.Event{Type: agent.TextContent, MessageID: "m1", Delta: "hi\n", Time: at},
			`{"type":"TEXT_MESSAGE_CONTENT","timestamp":1700000000123,"messageId":"m1","delta":"hi\n"}`},
		{agent.Event{Type: agent.TextEnd, MessageID: "m1", Time: at},
			`{"type":"TEXT_MESSAGE_END","timestamp":1700000000123,"messageId":"m1"}`},
		{agent.Event{Type: agent.ToolCallStart, ToolCallID: "c1", ToolName: "get_weather", Time: at},
			`{"type":"TOOL_CALL_START","timestamp":1700000000123,"toolCallId":"c1","toolCallName":"get_weather","parentMessageId":"msg-assistant"}`},
		{agent.Event{Type: agent.ToolCallArgs, ToolCallID: "c1", Delta: `{"city":"Oslo"}`, Time: at},
			`{"type":"TOOL_CALL_ARGS","timestamp":1700000000123,"toolCallId":"c1","delta":"{\"city\":\"Oslo\"}"}`},
		{agent.Event{Type: agent.ToolCallEnd, ToolCallID: "c1", Time: at},
			`{"type":"TOOL_CALL_END","timestamp":1700000000123,"toolCallId":"c1"}`},
		{agent.Event{Type: agent.ToolCallResult, ToolCallID: "c1", Result: `{"temp":3}`, Time: at},
			`{"type":"TOOL_CALL_RESULT","timestamp":1700000000123,"messageId":"c1-result","toolCallId":"c1","content":"{\"temp\":3}","role":"tool"}`},
		{agent.Event{Type: agent.ToolCallProgress, ToolCallID: "c1", Progress: 2, Total: 5, Delta: "indexing", Time: at},
			`{"type":"CUSTOM","timestamp":1700000000123,"name":"tool_call_progress","value":{"toolCallId":"c1","progress":2,"total":5,"message":"indexing"}}`},
		{agent.Event{Type: agent.ToolCallLog, ToolCallID: "c1", Level: "warning", Delta: "db: slow", Time: at},
			`{"type":"CUSTOM","timestamp":1700000000123,"name":"tool_call_log","value":{"toolCallId":"c1","level":"warning","message":"db: slow"}}`},
	} {
		ev := a.Convert(c.in)
		got, err := json.Marshal(ev)
		require.NoError(t, err)
		assert.JSONEq(t, c.want, string(got), string(c.in.Type))
		_, err = aguitest.Check(got)
		assert.NoError(t, err)
		kinds[string(ev.EventType())] = true
		var typ struct{ Type string }
		require.NoError(t, json.Unmarshal(got, &typ))
		assert.Equal(t, string(ev.EventType()), typ.Type)
	}

	// Without an injected run id the run's own is used; without a parent
	// message or a time those fields are left out.
	got, err := json.Marshal(agui.Adapter{ThreadID: "t"}.Convert(agent.Event{Type: agent.RunStarted, RunID: "run-own"}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"RUN_STARTED","threadId":"t","runId":"run-own","protocolVersion":"1.0"}`, string(got))
	got, err = json.Marshal(agui.Adapter{}.Convert(agent.Event{Type: agent.ToolCallStart, ToolCallID: "c", ToolName: "f"}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`, string(got))

	assert.Panics(t, func() { a.Convert(agent.Event{Type: "bogus"}) })
	assert.Len(t, kinds, 13, "the twelve kinds of seed 002, and progress")
	assert.ElementsMatch(t, aguitest.Types(), slices.Collect(maps.Keys(kinds)))
}

// The shape check catches what it is there to catch.
func TestShapeCheck(t *testing.T) {
	for _, bad := range []string{
		`[]`,
		`{"threadId":"t","runId":"r"}`,
		`{"type":"RUN_PAUSED"}`,
		`{"type":"RUN_STARTED","threadId":"t"}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":7}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`, // AG-UI 1.0: no version declared
		`{"type":"RUN_STARTED","thread_id":"t","threadId":"t","runId":"r","protocolVersion":"1.0"}`,
		`{"type":"TOOL_CALL_START","toolCallID":"c","toolCallId":"c","toolCallName":"f"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"tool"}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"x","role":"assistant"}`,
		`{"type":"STEP_STARTED","stepName":"s","timestamp":"now"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"paused"}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","interrupts":[]}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"1"}]}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"1","reason":"x","toolCallID":"1"}]}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"1","reason":"x"},{"id":"1","reason":"y"}]}}`,
	} {
		_, err := aguitest.Check([]byte(bad))
		assert.Error(t, err, bad)
	}
	for _, good := range []string{
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"1","reason":"tool_call","toolCallId":"1","expiresAt":"2026-01-01T00:00:00.000Z","metadata":{"run_id":"x"}}]}}`,
	} {
		_, err := aguitest.Check([]byte(good))
		assert.NoError(t, err, good)
	}
	for _, order := range [][]string{
		{`{"type":"TEXT_MESSAGE_START","messageId":"m"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"STEP_STARTED","stepName":"s"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"STEP_FINISHED","stepName":"s"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"other"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"RUN_ERROR","message":"x"}`, `{"type":"RUN_ERROR","message":"y"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"x"}`},
		{`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"1","reason":"x","toolCallId":"c"}]}}`},
	} {
		var s aguitest.Stream
		var err error
		for _, ev := range order {
			if _, err = s.Add([]byte(ev)); err != nil {
				break
			}
		}
		assert.Error(t, err, "%v", order)
	}
	var s aguitest.Stream
	_, err := s.Add([]byte(`{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`))
	require.NoError(t, err)
	assert.Error(t, s.End(), "a stream without its last event")
}

// A real run streamed as server-sent AG-UI events.
func TestExecutorToSSE(t *testing.T) {
	add := tools.MustFunc(tools.Schema{Name: "add", Params: []tools.Param{{Name: "a"}, {Name: "b"}}}, func(a, b int) int { return a + b })
	reg, err := tools.NewRegistry(add)
	require.NoError(t, err)
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	e, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper, Functions: reg})
	require.NoError(t, err)
	defer keeper.Close()

	var buf bytes.Buffer
	sink := agui.Adapter{ThreadID: "th", RunID: "ag-run"}.Sink(func(ev agui.Event) {
		require.NoError(t, agui.WriteSSE(&buf, ev))
	})
	res, err := e.ExecuteEvents(context.Background(), "th", json.RawMessage(`{"code":"print('x')\nadd(1, 2)"}`), sink)
	require.NoError(t, err)
	require.NoError(t, res.Err)

	var types []string
	var stream aguitest.Stream
	frames := strings.Split(strings.TrimSuffix(buf.String(), "\n\n"), "\n\n")
	for _, f := range frames {
		require.True(t, strings.HasPrefix(f, "data: "), f)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(f, "data: ")), &m), f)
		_, err := stream.Add([]byte(strings.TrimPrefix(f, "data: ")))
		require.NoError(t, err)
		types = append(types, m["type"].(string))
		if m["type"] == "RUN_FINISHED" {
			assert.Equal(t, "th", m["threadId"])
			assert.Equal(t, "ag-run", m["runId"])
			assert.Equal(t, float64(3), m["result"])
		}
		if m["type"] == "TOOL_CALL_ARGS" {
			assert.Equal(t, `{"a":1,"b":2}`, m["delta"])
		}
	}
	require.NoError(t, stream.End())
	assert.Equal(t, []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STEP_FINISHED", "RUN_FINISHED"}, types)

	// A failing run ends with RUN_ERROR carrying the exception type.
	buf.Reset()
	_, err = e.ExecuteEvents(context.Background(), "th", json.RawMessage(`{"code":"1/0"}`), sink)
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `"type":"RUN_ERROR"`)
	assert.Contains(t, buf.String(), `"code":"ZeroDivisionError"`)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteSSEErrors(t *testing.T) {
	ev := agui.Adapter{}.Convert(agent.Event{Type: agent.TextEnd, MessageID: "m"})
	require.EqualError(t, agui.WriteSSE(failWriter{}, ev), "closed")
	var buf bytes.Buffer
	require.NoError(t, agui.WriteSSE(&buf, ev))
	assert.Equal(t, "data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}\n\n", buf.String())
}

// Whole runs, as the executor streams them, fit the protocol's shapes and
// ordering: overlapping async calls, a call left running when the run
// ends (its step is finished before RUN_FINISHED), a failing run.
func TestRunsFitProtocol(t *testing.T) {
	slow := tools.MustFunc(tools.Schema{Name: "slow", Params: []tools.Param{{Name: "ms"}}}, func(ctx context.Context, ms int) int {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
		}
		return ms
	})
	slow.Async = true
	reg, err := tools.NewRegistry(slow)
	require.NoError(t, err)
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	e, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper, Functions: reg})
	require.NoError(t, err)
	defer keeper.Close()
	for _, code := range []string{
		"import asyncio\nprint('a')\nawait asyncio.gather(slow(20), slow(10), slow(30))",
		"x = slow(2000)\nprint('left behind')\n'done'",
		"import sys\nprint('x', file=sys.stderr)\nawait slow(1)\n1/0",
	} {
		var stream aguitest.Stream
		var steps int
		sink := agui.Adapter{ThreadID: "th"}.Sink(func(ev agui.Event) {
			b, err := json.Marshal(ev)
			require.NoError(t, err)
			_, err = stream.Add(b)
			assert.NoError(t, err, code)
			if ev.EventType() == agui.StepFinishedType {
				steps++
			}
		})
		_, err := e.ExecuteEvents(context.Background(), "th", codeJSON(code), sink)
		require.NoError(t, err)
		assert.NoError(t, stream.End(), code)
		assert.Positive(t, steps, code)
	}
}

func codeJSON(code string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"code": code})
	return b
}
