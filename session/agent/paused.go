package agent

import (
	"context"
	"fmt"
	"time"
)

// Paused returns the run a conversation's session (or its named session)
// is paused at, as a paused Result describes it, or nil when the session
// has none (or its run expired). It waits for a running call on that
// session to finish and, like a call, continues what is stored. A server
// that asks a person about the calls that wait for approval uses it to
// find them when the model asks it to ask again.
func (e *Executor) Paused(ctx context.Context, threadKey, sessionID string) (_ *PausedRun, err error) {
	ctx, lease, done, err := e.take(ctx, ResumeToolName, threadKey, sessionID)
	if err != nil {
		return nil, err
	}
	defer func() { err = done(err) }()
	id := lease.ID()
	s, err := e.session(ctx, lease)
	if err != nil {
		return nil, fmt.Errorf("agent: session %s: %w", id, err)
	}
	if err := s.Sync(ctx); err != nil {
		return nil, fmt.Errorf("agent: session %s: %w", id, err)
	}
	p := s.Paused()
	if p == nil || !time.Now().Before(p.Expires) {
		return nil, nil
	}
	return pausedOf(p, sessionID, e.fns), nil
}

// TimeLimit is the wall-time limit of each call (Session.Limits.MaxDuration
// as applied); 0 means none.
func (e *Executor) TimeLimit() time.Duration {
	if e.timeout < 0 {
		return 0
	}
	return e.timeout
}
