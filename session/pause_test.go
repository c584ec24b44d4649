package session_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// openIn opens session id of st, closed when the test ends.
func openIn(t *testing.T, st store.Store, id string) *session.Session {
	t.Helper()
	return open(t, id, session.Options{Store: st})
}

var tools = []session.ClientTool{{Name: "ask"}, {Name: "fetch", Async: true}}

// TestPausedRunMovesBetweenSessions: a run stops at a client tool, is
// stored, and is resumed by another session (another process, as far as
// the store can tell); while paused the session refuses other code.
func TestPausedRunMovesBetweenSessions(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "p")
	_, err := s.Exec(ctx, "before = 1")
	require.NoError(t, err)
	res, err := s.ExecOptions(ctx, "greeting = 'hi ' + ask('name?', loud=True)\ngreeting.upper()", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	assert.True(t, res.Saved)
	assert.Nil(t, res.Value)
	p := res.Paused
	require.Len(t, p.Calls, 1)
	assert.Equal(t, "ask", p.Calls[0].Name)
	assert.Equal(t, []object.Value{object.Str("name?")}, p.Calls[0].Args)
	assert.Equal(t, []object.Pair{{Key: object.Str("loud"), Value: object.Bool(true)}}, p.Calls[0].Kwargs)
	assert.WithinDuration(t, time.Now().Add(session.DefaultRunTTL), p.Expires, time.Minute)

	other := openIn(t, st, "p")
	require.NotNil(t, other.Paused())
	assert.Equal(t, p.RunID, other.Paused().RunID)
	_, err = other.Exec(ctx, "1")
	require.ErrorIs(t, err, session.ErrRunPaused)

	res, err = other.Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID, Value: object.Str("ada")}})
	require.NoError(t, err)
	require.Nil(t, res.Paused)
	assert.Equal(t, object.Str("HI ADA"), res.Value)
	assert.True(t, res.Saved)
	assert.Nil(t, other.Paused())

	_, err = other.Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID, Value: object.Str("again")}})
	require.ErrorIs(t, err, session.ErrRunNotPaused, "a run is resumed once")
	third := openIn(t, st, "p")
	res, err = third.Exec(ctx, "(before, greeting)")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Int(1), object.Str("hi ada")}, res.Value)
	assert.Equal(t, []string{"before", "greeting"}, third.Globals())
}

// TestPausedRunGather: async tools gathered stop the run once with all
// their calls; they may be answered some at a time, and an error result
// raises in the code.
func TestPausedRunGather(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "g")
	res, err := s.ExecOptions(ctx, `
import asyncio
async def main():
    try:
        return await asyncio.gather(fetch('a'), fetch('b'), fetch('c'))
    except KeyError as e:
        return 'KeyError ' + str(e)
await main()`, session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	calls := res.Paused.Calls
	require.Len(t, calls, 3)
	for i, want := range []string{"a", "b", "c"} {
		assert.Equal(t, []object.Value{object.Str(want)}, calls[i].Args)
	}

	res, err = openIn(t, st, "g").Resume(ctx, res.Paused.RunID, []session.ToolResult{{ID: calls[1].ID, Value: object.Str("B")}})
	require.NoError(t, err)
	require.NotNil(t, res.Paused, "still waiting for a and c")
	assert.Len(t, res.Paused.Calls, 2)

	res, err = openIn(t, st, "g").Resume(ctx, res.Paused.RunID, []session.ToolResult{
		{ID: calls[0].ID, Value: object.Str("A")},
		{ID: calls[2].ID, Error: &runtime.Exception{Type: "KeyError", Message: "no c"}},
	})
	require.NoError(t, err)
	require.Nil(t, res.Paused)
	assert.Equal(t, object.Str("KeyError 'no c'"), res.Value, "the error result raised in the code")

	// All answered with values: gather returns them in order.
	res, err = s.ExecOptions(ctx, "await main()", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	var results []session.ToolResult
	for i, c := range res.Paused.Calls {
		results = append(results, session.ToolResult{ID: c.ID, Value: object.Int(int64(i))})
	}
	res, err = s.Resume(ctx, res.Paused.RunID, results)
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Int(0), object.Int(1), object.Int(2)}, res.Value)
}

// TestResumeBadResults: results that do not answer the run are refused and
// leave it paused; an expired run cannot be resumed and is abandoned by
// the next call.
func TestResumeBadResults(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "b")
	res, err := s.ExecOptions(ctx, "x = 1\nask('q')", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	p := res.Paused
	id := p.Calls[0].ID
	for name, results := range map[string][]session.ToolResult{
		"none":      nil,
		"unknown":   {{ID: "999", Value: object.Int(1)}},
		"not an id": {{ID: "ask", Value: object.Int(1)}},
		"leading 0": {{ID: "0" + id, Value: object.Int(1)}},
		"sign":      {{ID: "+" + id, Value: object.Int(1)}},
		"twice":     {{ID: id, Value: object.Int(1)}, {ID: id, Value: object.Int(2)}},
		"no type":   {{ID: id, Error: &runtime.Exception{Message: "x"}}},
	} {
		_, err := s.Resume(ctx, p.RunID, results)
		assert.ErrorIs(t, err, session.ErrBadResults, name)
	}
	_, err = s.Resume(ctx, "nope", []session.ToolResult{{ID: id}})
	assert.ErrorIs(t, err, session.ErrRunNotPaused)
	require.NotNil(t, s.Paused(), "still paused")

	// A run that waits too long expires.
	res, err = openIn(t, st, "e").ExecOptions(ctx, "y = 2\nask('q')", session.ExecOptions{Tools: tools, RunTTL: time.Millisecond})
	require.NoError(t, err)
	exp := res.Paused
	time.Sleep(2 * time.Millisecond) // past a 1 ms TTL
	late := openIn(t, st, "e")
	_, err = late.Resume(ctx, exp.RunID, []session.ToolResult{{ID: exp.Calls[0].ID, Value: object.Int(1)}})
	require.ErrorIs(t, err, session.ErrRunExpired)
	res, err = late.Exec(ctx, "y")
	require.NoError(t, err, "the next call abandons the expired run")
	assert.Equal(t, object.Int(2), res.Value, "what the run set before it paused stays")
	assert.Nil(t, late.Paused())

	// Tool names must not hide host functions, and JSON-only sessions
	// cannot pause.
	_, err = openIn(t, st, "n").ExecOptions(ctx, "1", session.ExecOptions{Tools: []session.ClientTool{{Name: ""}}})
	assert.ErrorIs(t, err, runtime.ErrInvalidOption)
	js, err := session.Open(ctx, "j", session.Options{Store: st, JSONOnly: true})
	require.NoError(t, err)
	defer js.Close(ctx)
	_, err = js.ExecOptions(ctx, "ask('q')", session.ExecOptions{Tools: tools})
	assert.ErrorIs(t, err, runtime.ErrInvalidOption)
}

// TestConcurrentResumes: two sessions resume the same run at once: one
// stores its outcome, the other fails, and the stored state is the
// winner's.
func TestConcurrentResumes(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	res, err := openIn(t, st, "c").ExecOptions(ctx, "answer = ask('q')\nanswer", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	p := res.Paused
	a, b := openIn(t, st, "c"), openIn(t, st, "c")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*session.Session{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID, Value: object.Int(int64(i))}})
		}()
	}
	wg.Wait()
	var wins []int
	for i, err := range errs {
		if err == nil {
			wins = append(wins, i)
		} else {
			// The loser lost the compare-and-set, or saw the winner's
			// state first.
			assert.True(t, errors.Is(err, store.ErrConflict) || errors.Is(err, session.ErrRunNotPaused), "the loser: %v", err)
		}
	}
	require.Len(t, wins, 1, "exactly one resume wins: %v", errs)
	res, err = openIn(t, st, "c").Exec(ctx, "answer")
	require.NoError(t, err)
	assert.Equal(t, object.Int(int64(wins[0])), res.Value)
}

// TestPausedRunEdges: the blocking call is marked; a resume stopped by a
// limit leaves the run paused (and a pause does not count against the
// resume's time); client tools type-check; a paused run this build cannot
// continue is refused, not dropped.
func TestPausedRunEdges(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	limits := runtime.DefaultLimits()
	limits.MaxDuration = 300 * time.Millisecond
	s, err := session.Open(ctx, "edge", session.Options{Store: st, Limits: limits})
	require.NoError(t, err)
	defer s.Close(ctx)
	res, err := s.ExecOptions(ctx, `
import asyncio
f = fetch('later')
x = ask('now')
while x == 'spin':
    pass
x`, session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	p := res.Paused
	require.Len(t, p.Calls, 2)
	assert.False(t, p.Calls[0].Blocking)
	assert.True(t, p.Calls[1].Blocking, "the sync call the code is stopped at")
	assert.Equal(t, "ask", p.Calls[1].Name)

	time.Sleep(350 * time.Millisecond) // longer than MaxDuration: waiting is not running
	res, err = s.Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[1].ID, Value: object.Str("spin")}})
	require.NoError(t, err)
	require.ErrorIs(t, res.Err, runtime.ErrTimeLimit, "the resumed code ran into the limit")
	require.NotNil(t, s.Paused(), "a limit leaves the run paused")
	res, err = s.Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[1].ID, Value: object.Str("ok")}})
	require.NoError(t, err)
	assert.Equal(t, object.Str("ok"), res.Value, "resumed again after the limit, past the pause")

	// Client tools are declared to the type checker (a session without
	// the short time limit: a check under -race can take longer).
	tc := &session.TypeCheck{}
	res, err = openIn(t, st, "edge-tc").ExecOptions(ctx, "y: str = ask('q')\nz = await fetch(1)", session.ExecOptions{Tools: tools, TypeCheck: tc})
	require.NoError(t, err, "the checker knows the tools")
	require.NotNil(t, res.Paused)

	// A JSON-only opening cannot continue it: refused, the state kept.
	_, err = session.Open(ctx, "edge-tc", session.Options{Store: st, JSONOnly: true})
	require.ErrorIs(t, err, session.ErrRunUnloadable)
	require.NotNil(t, openIn(t, st, "edge-tc").Paused(), "still stored paused")
}

// TestInspectPausedRun: Inspect reads a paused run's calls and arguments
// from the stored blob, without an interpreter; an idle session has none.
func TestInspectPausedRun(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "i")
	_, err := s.Exec(ctx, "x = 1")
	require.NoError(t, err)
	obj, err := st.Get(ctx, "i")
	require.NoError(t, err)
	in, err := session.Inspect(obj.Data, nil)
	require.NoError(t, err)
	assert.Nil(t, in.Paused, "an idle session has no paused run")

	res, err := s.ExecOptions(ctx, "ask('<b>q</b>', n=2)", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	obj, err = st.Get(ctx, "i")
	require.NoError(t, err)
	in, err = session.Inspect(obj.Data, nil)
	require.NoError(t, err)
	require.NotNil(t, in.Paused)
	assert.Equal(t, res.Paused.RunID, in.Paused.RunID)
	require.Len(t, in.Paused.Calls, 1)
	c := in.Paused.Calls[0]
	assert.Equal(t, "ask", c.Name)
	assert.True(t, c.Blocking)
	assert.Equal(t, []object.Value{object.Str("<b>q</b>")}, c.Args)
	assert.Equal(t, []object.Pair{{Key: object.Str("n"), Value: object.Int(2)}}, c.Kwargs)
	assert.WithinDuration(t, res.Paused.Expires, in.Paused.Expires, time.Millisecond)
}
