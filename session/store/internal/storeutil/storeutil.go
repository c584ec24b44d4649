// Package storeutil holds small helpers shared by the store implementations:
// version tokens, timestamps and errors.
package storeutil

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/monty-go/monty/session/store"
)

// NewVersion returns a fresh random version token (24 hex digits). Tokens
// are random rather than counters so that a token is never reused, not even
// after the id was deleted and created again: a stale IfVersion can never
// match a later blob by accident.
func NewVersion() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b[:])
}

// Now returns the current time in UTC without a monotonic reading, so that it
// compares equal to itself after a round trip through a store.
func Now() time.Time {
	return time.Now().UTC().Round(0)
}

// Expiry returns now+ttl, or the zero time when ttl is not positive.
func Expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

// NextInfo is the info of data stored under id at now with a fresh
// version. When prev (the live blob it replaces) is not nil, the creation
// time carries over and the modification time is kept strictly after
// prev's, even if the clock repeated or stepped back; the expiry follows
// the modification time.
func NextInfo(id string, data []byte, now time.Time, ttl time.Duration, source string, prev *store.Info) store.Info {
	inf := store.Info{
		ID:       id,
		Size:     int64(len(data)),
		SHA256:   store.Checksum(data),
		Version:  NewVersion(),
		Created:  now,
		Modified: now,
		Source:   source,
	}
	if prev != nil {
		inf.Created = prev.Created
		if !now.After(prev.Modified) {
			inf.Modified = prev.Modified.Add(time.Nanosecond)
		}
	}
	inf.Expires = Expiry(inf.Modified, ttl)
	return inf
}

// Expired reports whether a blob with the given expiry time is expired at now.
func Expired(expires, now time.Time) bool {
	return !expires.IsZero() && !now.Before(expires)
}

// UnixNano returns t as Unix nanoseconds, or 0 for the zero time.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNano is the inverse of UnixNano.
func FromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// NotFound returns store.ErrNotFound wrapped with the id.
func NotFound(id string) error {
	return fmt.Errorf("%w: %q", store.ErrNotFound, id)
}

// Conflict returns store.ErrConflict wrapped with the id and the reason.
func Conflict(id, why string) error {
	return fmt.Errorf("%w: %q: %s; read it again and retry", store.ErrConflict, id, why)
}

// Closed returns store.ErrUnavailable for a store used after Close.
func Closed(name string) error {
	return fmt.Errorf("%w: %s store is closed (open a new one)", store.ErrUnavailable, name)
}

// Check applies cond to the current state of id: exists tells whether a
// live (unexpired) blob is stored and version is its version.
func Check(id string, cond store.Cond, exists bool, version string) error {
	switch {
	case cond.IfAbsent && exists:
		return Conflict(id, "it already exists (Put with IfAbsent)")
	case cond.IfVersion != "" && !exists:
		return Conflict(id, "it no longer exists (Put with IfVersion)")
	case cond.IfVersion != "" && version != cond.IfVersion:
		return Conflict(id, "it was changed since version "+cond.IfVersion+" was read")
	}
	return nil
}

// Unreadable returns the error for a damaged entry (the message says which
// and why): it matches store.ErrUnreadable and, as stores reported damage
// as store.ErrUnavailable before ErrUnreadable existed, that too.
func Unreadable(format string, args ...any) error {
	return &unreadable{msg: store.ErrUnreadable.Error() + ": " + fmt.Sprintf(format, args...)}
}

type unreadable struct{ msg string }

func (e *unreadable) Error() string { return e.msg }

func (e *unreadable) Is(target error) bool {
	return target == store.ErrUnreadable || target == store.ErrUnavailable
}

// IsHex reports whether s is n lowercase hex digits (a checksum as the
// stores record it).
func IsHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
