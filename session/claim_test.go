package session_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// makeCall is a ResumeOptions whose Make answers every claimed call with
// "done", counting the calls made; with release, it says so on started
// and then waits for release.
func makeCall(who string, made *atomic.Int32, started chan<- struct{}, release <-chan struct{}, ids ...string) session.ResumeOptions {
	return session.ResumeOptions{Who: who, Claim: ids, Lease: time.Minute,
		Name: func(c session.ToolCall) string { return "ops." + c.Name },
		Make: func(ctx context.Context, p *session.Paused, results []session.ToolResult) ([]session.ToolResult, error) {
			out := make([]session.ToolResult, len(results))
			for i, r := range results {
				made.Add(1)
				if release != nil {
					started <- struct{}{}
					<-release
				}
				out[i] = session.ToolResult{ID: r.ID, Value: object.Str("done"),
					Decision: &session.Decision{Who: who, Tool: "ops.ask", Approved: true, Outcome: session.DecisionOK}}
			}
			return out, nil
		}}
}

// pausedAt runs code that stops at ask in session id of st.
func pausedAt(t *testing.T, st store.Store, id string) *session.Paused {
	t.Helper()
	res, err := openIn(t, st, id).ExecOptions(context.Background(), "r = ask('wipe', target='prod')\nr", session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	return res.Paused
}

// TestClaimRace: sessions of one id (processes, as far as the store can
// tell) resume the same run at once, each to make its call: exactly one
// claims the run and makes the call; the others fail with ErrRunClaimed,
// which matches ErrRunNotPaused, and make nothing.
func TestClaimRace(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	p := pausedAt(t, st, "race")
	const racers = 5
	sessions := make([]*session.Session, racers)
	for i := range sessions {
		sessions[i] = openIn(t, st, "race")
	}
	var made atomic.Int32
	var wg sync.WaitGroup
	errs := make([]error, racers)
	start := make(chan struct{})
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := []session.ToolResult{{ID: p.Calls[0].ID}}
			var err error
			if _, err = s.ResumeOptions(ctx, p.RunID, res, makeCall("ops", &made, nil, nil, p.Calls[0].ID)); err == nil {
				return
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		assert.ErrorIs(t, err, session.ErrRunNotPaused)
		if !errors.Is(err, session.ErrRunClaimed) {
			// Came after the winner stored the outcome: the run is over.
			assert.Contains(t, err.Error(), "no paused run")
		}
	}
	assert.Equal(t, 1, ok, "one resume wins")
	assert.Equal(t, int32(1), made.Load(), "the call was made once")
	res, err := openIn(t, st, "race").Exec(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, object.Str("done"), res.Value)
}

// TestClaimLapsed: a resume that claimed the run and died (its session
// dropped, the claim left in the store) blocks others while its lease
// holds; after that, the next resume lists the run again, the call marked
// MayHaveRun under a new run id, and makes nothing; a resume of the old id
// gets the same listing; only a resume of the new id makes the call again,
// with the same idempotency key. The decisions are stored with the
// session, oldest first.
func TestClaimLapsed(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	p := pausedAt(t, st, "lapse")
	key := p.Calls[0].IdempotencyKey
	require.Regexp(t, `^mgik-[0-9a-f]{32}$`, key)

	// The holder: its call never returns, as if its process died.
	holder := openIn(t, st, "lapse")
	var made atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	o := makeCall("alice", &made, started, release, p.Calls[0].ID)
	o.Lease = 300 * time.Millisecond
	claimed := time.Now()
	holderDone := make(chan error, 1)
	go func() {
		_, err := holder.ResumeOptions(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, o)
		holderDone <- err
	}()
	other := openIn(t, st, "lapse")
	<-started // its Make is under way: the claim is stored
	require.NoError(t, other.Sync(ctx))
	require.NotNil(t, other.Paused().Claim)
	assert.Equal(t, "alice", other.Paused().Claim.Who)
	_, err := other.ResumeOptions(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, makeCall("bob", &made, nil, nil, p.Calls[0].ID))
	require.ErrorIs(t, err, session.ErrRunClaimed)
	assert.Contains(t, err.Error(), "claimed by alice")

	time.Sleep(time.Until(claimed.Add(o.Lease + 50*time.Millisecond)))
	res, err := other.ResumeOptions(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, makeCall("bob", &made, nil, nil, p.Calls[0].ID))
	require.NoError(t, err)
	relisted := res.Paused
	require.NotNil(t, relisted)
	assert.Equal(t, p.RunID, relisted.Previous)
	assert.NotEqual(t, p.RunID, relisted.RunID)
	require.Len(t, relisted.Calls, 1)
	assert.True(t, relisted.Calls[0].MayHaveRun)
	assert.Equal(t, key, relisted.Calls[0].IdempotencyKey, "the same key for the same call")
	assert.Nil(t, relisted.Claim)
	assert.Equal(t, int32(1), made.Load(), "nothing made: may have run")

	res, err = openIn(t, st, "lapse").Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID, Value: object.Str("forged")}})
	require.NoError(t, err)
	assert.Equal(t, relisted.RunID, res.Paused.RunID, "the old id gets the listing, nothing made")

	res, err = other.ResumeOptions(ctx, relisted.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, makeCall("bob", &made, nil, nil, p.Calls[0].ID))
	require.NoError(t, err)
	assert.Nil(t, res.Paused)
	assert.Equal(t, object.Str("done"), res.Value)
	assert.Equal(t, int32(2), made.Load())

	ds := openIn(t, st, "lapse").Decisions()
	require.Len(t, ds, 2)
	assert.Equal(t, session.DecisionMayHaveRun, ds[0].Outcome)
	assert.Equal(t, "alice", ds[0].Who, "the lost claim's decider")
	assert.Equal(t, "ops.ask", ds[0].Tool)
	assert.Equal(t, "ops.ask('wipe', target='prod')", ds[0].Args)
	assert.Equal(t, key, ds[0].IdempotencyKey)
	assert.Equal(t, p.RunID, ds[0].RunID)
	assert.Equal(t, session.DecisionOK, ds[1].Outcome)
	assert.Equal(t, "bob", ds[1].Who)
	assert.Equal(t, relisted.RunID, ds[1].RunID, "the session fills in the run")
	assert.Equal(t, p.Calls[0].ID, ds[1].CallID)

	// The holder comes back late: its outcome is not stored.
	close(release)
	require.ErrorIs(t, <-holderDone, store.ErrConflict)
	res, err = openIn(t, st, "lapse").Exec(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, object.Str("done"), res.Value)
	assert.Len(t, openIn(t, st, "lapse").Decisions(), 2)
}

// TestClaimGivenUp: a claiming resume that fails after its claim (here,
// its Make) lists the run again at once, the call marked MayHaveRun.
func TestClaimGivenUp(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	p := pausedAt(t, st, "fail")
	s := openIn(t, st, "fail")
	boom := errors.New("the call's connection broke")
	o := session.ResumeOptions{Who: "alice", Claim: []string{p.Calls[0].ID},
		Make: func(context.Context, *session.Paused, []session.ToolResult) ([]session.ToolResult, error) {
			return nil, boom
		}}
	_, err := s.ResumeOptions(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, o)
	require.ErrorIs(t, err, boom)
	again := openIn(t, st, "fail").Paused()
	require.NotNil(t, again)
	assert.Equal(t, p.RunID, again.Previous)
	assert.True(t, again.Calls[0].MayHaveRun)
	assert.Nil(t, again.Claim)
	ds := openIn(t, st, "fail").Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, session.DecisionMayHaveRun, ds[0].Outcome)
	assert.Equal(t, "ask", ds[0].Tool, "without Name, the method's name")

	// Check refuses before the claim: nothing changes.
	refused := errors.New("not that one")
	o = session.ResumeOptions{Who: "bob", Claim: []string{p.Calls[0].ID}, Check: func(*session.Paused) error { return refused }}
	_, err = s.ResumeOptions(ctx, again.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, o)
	require.ErrorIs(t, err, refused)
	assert.Nil(t, openIn(t, st, "fail").Paused().Claim)
	_, err = s.ResumeOptions(ctx, again.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, session.ResumeOptions{Claim: []string{"99"}})
	require.ErrorIs(t, err, session.ErrBadResults, "only calls of the run are claimed")
}

// TestIdempotencyKeyAcrossPauses: the key of a call stays the same while
// its execution pauses again (async calls answered some at a time), and
// differs between calls and sessions.
func TestIdempotencyKeyAcrossPauses(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "keys")
	res, err := s.ExecOptions(ctx, `
import asyncio
async def main():
    return await asyncio.gather(fetch(1), fetch(2))
await main()`, session.ExecOptions{Tools: tools})
	require.NoError(t, err)
	p := res.Paused
	require.Len(t, p.Calls, 2)
	assert.NotEqual(t, p.Calls[0].IdempotencyKey, p.Calls[1].IdempotencyKey)
	res, err = openIn(t, st, "keys").Resume(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID, Value: object.Int(1)}})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	require.Len(t, res.Paused.Calls, 1)
	assert.NotEqual(t, p.RunID, res.Paused.RunID)
	assert.Equal(t, p.Calls[1].IdempotencyKey, res.Paused.Calls[0].IdempotencyKey, "the same call, the same key")
	assert.NotEqual(t, session.IdempotencyKey("other", "o", "1"), session.IdempotencyKey("keys", "o", "1"))
}

// TestClaimOutlivesTTL: a run claimed just before its TTL ends stays
// paused while the claim holds: another call of the session is refused
// rather than abandoning the run under the claimer, whose outcome is then
// stored. A run whose claim lapsed and that expired meanwhile is
// abandoned by the next call, which records its claimed call as may have
// run.
func TestClaimOutlivesTTL(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	res, err := openIn(t, st, "ttl").ExecOptions(ctx, "r = ask('wipe', target='prod')\nr", session.ExecOptions{Tools: tools, RunTTL: 300 * time.Millisecond})
	require.NoError(t, err)
	p := res.Paused
	var made atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // a failing check must not leave the claimer waiting
	done := make(chan *session.Result, 1)
	go func() {
		res, err := openIn(t, st, "ttl").ResumeOptions(ctx, p.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, makeCall("alice", &made, started, release, p.Calls[0].ID))
		assert.NoError(t, err)
		done <- res
	}()
	<-started
	time.Sleep(time.Until(p.Expires.Add(50 * time.Millisecond)))
	_, err = openIn(t, st, "ttl").Exec(ctx, "1")
	require.ErrorIs(t, err, session.ErrRunPaused, "the claimed run is not abandoned")
	free()
	res = <-done
	require.NotNil(t, res)
	assert.Equal(t, object.Str("done"), res.Value)
	ds := openIn(t, st, "ttl").Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, session.DecisionOK, ds[0].Outcome)

	// A claim that lapsed on a run that expired: abandoned, may have run.
	res, err = openIn(t, st, "gone").ExecOptions(ctx, "r = ask('wipe', target='prod')\nr", session.ExecOptions{Tools: tools, RunTTL: 200 * time.Millisecond})
	require.NoError(t, err)
	p = res.Paused
	started2, never := make(chan struct{}, 1), make(chan struct{})
	defer close(never)
	o := makeCall("carol", &made, started2, never, p.Calls[0].ID)
	o.Lease = 300 * time.Millisecond
	go func() {
		_, _ = openIn(t, st, "gone").ResumeOptions(context.Background(), p.RunID, []session.ToolResult{{ID: p.Calls[0].ID}}, o)
	}()
	<-started2 // claimed, and its process "dies" (never returns in time)
	time.Sleep(400 * time.Millisecond)
	later := openIn(t, st, "gone")
	res, err = later.Exec(ctx, "2")
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), res.Value)
	ds = openIn(t, st, "gone").Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, session.DecisionMayHaveRun, ds[0].Outcome)
	assert.Equal(t, "carol", ds[0].Who)
}
