package session

import (
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

// CorruptReason says why stored state does not load (err: a
// CorruptStateError's Err, or Restore.Err), in words fit for a client of
// a service: the store's own error, which may name its hosts and paths,
// is left for the log.
func CorruptReason(err error) string {
	if errors.Is(err, store.ErrUnreadable) {
		return "the store cannot read it: its entry is damaged"
	}
	return err.Error()
}

// Unreadable reports whether the store itself could not read the entry
// (store.ErrUnreadable), as opposed to a blob that was read but does not
// load.
func (e *CorruptStateError) Unreadable() bool { return errors.Is(e.Err, store.ErrUnreadable) }

// maxSalvage bounds what is read from an entry the store cannot read, to
// keep it aside: a state blob of the largest size this session stores, and
// room for the store's own framing.
func (o *Options) maxSalvage() int64 { return o.maxStateSize() + 1<<20 }
