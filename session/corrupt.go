package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/monty-go/monty/session/store"
)

// NotSavedEphemeral is Result.NotSavedReason for every call of a session
// with Options.Ephemeral.
const NotSavedEphemeral = "state persistence is off: nothing is stored, and the next call starts empty"

// CorruptStateError is the error Open returns when the stored state cannot
// be loaded (damaged, truncated, of another format, written for another
// session, signed with another key, or an entry the store cannot read) and
// the session was not started empty: Options.FreshOnCorrupt is not set, or
// the state could not be kept aside first. It matches ErrCorrupt. The
// stored state is left in place either way.
type CorruptStateError struct {
	// ID is the session id.
	ID string
	// QuarantinedAs is the id of the copy kept aside; empty when none could
	// be made (KeepErr says why).
	QuarantinedAs string
	// Err is why the state does not load: it matches ErrCorrupt, and
	// store.ErrUnreadable when the store could not read the entry at all.
	Err error
	// KeepErr is why the state could not be kept aside (nil when it was).
	KeepErr error
}

// Error says what happened and what to do.
func (e *CorruptStateError) Error() string {
	if e.KeepErr != nil {
		return fmt.Sprintf("session %s: stored state cannot be loaded (%v) and keeping it aside failed: %v; it was left in place (delete it, or repair the store, to start the session empty)", e.ID, e.Err, e.KeepErr)
	}
	return fmt.Sprintf("session %s: stored state cannot be loaded: %v; a copy was kept as %q and the original left in place (open with FreshOnCorrupt, or delete it, to start empty)", e.ID, e.Err, e.QuarantinedAs)
}

// Unwrap returns Err.
func (e *CorruptStateError) Unwrap() error { return e.Err }

// Unreadable reports whether the store itself could not read the entry
// (store.ErrUnreadable), as opposed to a blob that was read but does not
// load.
func (e *CorruptStateError) Unreadable() bool { return errors.Is(e.Err, store.ErrUnreadable) }

// maxSalvage bounds what is read from an entry the store cannot read, to
// keep it aside: a state blob of the largest size this session stores, and
// room for the store's own framing.
func (o *Options) maxSalvage() int64 { return o.maxStateSize() + 1<<20 }

// salvage handles an entry the store reports unreadable (unreadErr): its
// bytes are kept aside through the store's store.Salvager, then the
// session fails or starts fresh as for a blob that does not load. A store
// that cannot hand the bytes over leaves the session failing: nothing is
// replaced that was not kept.
func (s *Session) salvage(ctx context.Context, unreadErr error) error {
	s.restore.Found = true
	cause := fmt.Errorf("%w: the store cannot read it: %w", ErrCorrupt, unreadErr)
	sv, ok := s.opts.Store.(store.Salvager)
	if !ok {
		return &CorruptStateError{ID: s.id, Err: cause, KeepErr: errors.New("this store cannot hand over an entry it cannot read")}
	}
	data, token, err := sv.Salvage(ctx, s.id, s.opts.maxSalvage())
	if errors.Is(err, store.ErrNotFound) {
		// Removed meanwhile: nothing is stored.
		s.restore = Restore{}
		return s.fresh(ctx)
	}
	if err != nil {
		return &CorruptStateError{ID: s.id, Err: cause, KeepErr: err}
	}
	return s.quarantine(ctx, data, cause, token)
}

// RestoreNotice returns how the session got its state (as Restored), once:
// the first call after Open, or after the session reloaded its state from
// the store (which it does after losing a race to another writer), returns
// true; later calls return false until the next load. A caller that keeps
// a session open across many calls, as a Manager does, uses it to tell
// about a fresh start or a fallback once.
func (s *Session) RestoreNotice() (Restore, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noticed {
		return Restore{}, false
	}
	s.noticed = true
	return s.restore, true
}
