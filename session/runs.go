package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/monty-go/monty/runtime"
)

// runs is a session's paused-run bookkeeping: the run paused at client
// tool calls, as saved, and what the call in progress records should it
// pause. A Session holds one; its fields are guarded by the session's
// lock.
type runs struct {
	paused  *activeRun // nil: none
	pending *pausedRun
}

// activeRun is the paused run of a live session.
type activeRun struct {
	exec *runtime.Execution
	rec  *pausedRun
}

// public describes the paused run of the session stored under sid; nil
// when none.
func (r *runs) public(sid string) *Paused {
	if r.paused == nil {
		return nil
	}
	return r.paused.rec.public(sid)
}

// record is the paused run's record, as a save stores it; nil when none.
func (r *runs) record() *pausedRun {
	if r.paused == nil {
		return nil
	}
	return r.paused.rec
}

// adopt takes the paused execution of a loaded blob.
func (r *runs) adopt(b *blob, paused *runtime.Execution) error {
	switch {
	case b.Run == nil && paused == nil:
		return nil
	case b.Run == nil || paused == nil:
		return corrupt("the paused run and the dump disagree")
	}
	r.paused = &activeRun{exec: paused, rec: b.Run}
	return nil
}

// settle lets a call of session id run: an expired paused run is
// abandoned (its code gets an exception it cannot catch; the globals it
// set stay), a live one refuses the call.
func (r *runs) settle(ctx context.Context, id string) error {
	if r.paused == nil {
		return nil
	}
	rec := r.paused.rec
	if until := rec.expiresAt(); time.Now().Before(until) {
		return fmt.Errorf("%w: session %s, run %s (resume it, or wait until %s when it expires)", ErrRunPaused, id, rec.ID, until.Format(time.RFC3339))
	}
	r.paused.exec.Close(ctx)
	r.paused = nil
	return nil
}

// begin notes what a call running code with tools records if it pauses.
func (r *runs) begin(code string, tools []ClientTool, ttl time.Duration) {
	if ttl <= 0 {
		ttl = DefaultRunTTL
	}
	r.pending = &pausedRun{Code: code, Tools: slices.Clone(tools), TTL: int64(ttl)}
}

// pause records the run a Drive suspended, stopped in e: its calls,
// merged with the ones still outstanding from before. sid is the
// session's store id.
func (r *runs) pause(sp *runtime.Suspended, e *runtime.Execution, sid string) *Paused {
	rec := r.pending
	if r.paused != nil {
		rec = r.paused.rec // a resumed run paused again
	}
	known := map[uint32]storedCall{}
	for _, c := range rec.Calls {
		known[c.ID] = c
	}
	for _, c := range sp.Calls {
		known[c.CallID] = storeCall(c)
	}
	next := &pausedRun{Code: rec.Code, Tools: rec.Tools, TTL: rec.TTL, ID: newRunID(), Origin: rec.Origin,
		Expires: time.Now().Add(time.Duration(rec.TTL)).UTC().Truncate(time.Millisecond)}
	if next.Origin == "" {
		next.Origin = next.ID // the execution's first pause
	}
	// The run waits on these: the outstanding futures and the new calls;
	// for a sync call, that call last.
	outstanding := r.outstanding()
	for _, id := range sp.Waiting {
		outstanding[id] = true
	}
	for _, c := range sp.Calls {
		outstanding[c.CallID] = true
	}
	if p, ok := blockingCall(e); ok {
		next.Blocking = &p
	}
	for id := range outstanding {
		if c, ok := known[id]; ok && (next.Blocking == nil || id != *next.Blocking) {
			next.Calls = append(next.Calls, c)
		}
	}
	slices.SortFunc(next.Calls, func(a, b storedCall) int { return int(a.ID) - int(b.ID) })
	if next.Blocking != nil {
		next.Calls = append(next.Calls, known[*next.Blocking])
	}
	for _, id := range rec.Uncertain {
		if slices.ContainsFunc(next.Calls, func(c storedCall) bool { return c.ID == id }) {
			next.Uncertain = append(next.Uncertain, id)
		}
	}
	r.paused = &activeRun{exec: e, rec: next}
	r.pending = nil
	return next.public(sid)
}

// outstanding are the async calls of the paused run still unanswered.
func (r *runs) outstanding() map[uint32]bool {
	out := map[uint32]bool{}
	if r.paused != nil {
		for _, c := range r.paused.rec.Calls {
			if b := r.paused.rec.Blocking; b == nil || c.ID != *b {
				out[c.ID] = true
			}
		}
	}
	return out
}

// blockingCall is the id of the sync call e is stopped at.
func blockingCall(e *runtime.Execution) (uint32, bool) {
	if e == nil {
		return 0, false
	}
	if c, ok := e.Pause().(*runtime.FunctionCall); ok {
		return c.CallID, true
	}
	return 0, false
}

// find is the paused run runID of session id, unless it is gone or
// expired. relisted is set instead when runID was listed again as another
// run (pausedRun.relisted): the resume is answered with that run.
func (r *runs) find(id, runID string) (run *activeRun, relisted bool, err error) {
	if r.paused != nil && r.paused.rec.Previous == runID && runID != "" {
		return r.paused, true, nil
	}
	if !r.has(runID) {
		return nil, false, fmt.Errorf("%w: session %s has no paused run %q (resumed already, abandoned after expiring, or never made)", ErrRunNotPaused, id, runID)
	}
	if until := r.paused.rec.expiresAt(); !time.Now().Before(until) {
		return nil, false, fmt.Errorf("%w: run %s expired at %s", ErrRunExpired, runID, until.Format(time.RFC3339))
	}
	return r.paused, false, nil
}

// has reports whether runID is the paused run.
func (r *runs) has(runID string) bool {
	return r.paused != nil && r.paused.rec.ID == runID
}

// resumed records what a resume of run with results left: the run over
// (paused is false), or stopped in e again, waiting on the calls results
// left unanswered and on those it makes next (pause adds them).
func (r *runs) resumed(run *activeRun, results []ToolResult, e *runtime.Execution, paused bool) {
	if !paused {
		r.paused = nil // over, one way or another (a failed resume reloads it)
		return
	}
	rec := run.rec
	r.paused = &activeRun{exec: e, rec: &pausedRun{Code: rec.Code, Tools: rec.Tools, TTL: rec.TTL, Calls: rec.remaining(results),
		Origin: rec.origin(), Uncertain: rec.Uncertain}}
}
