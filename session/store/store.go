// Package store defines where session state lives: a small Store interface
// with compare-and-set, and its implementations (memory, directory, Redis,
// S3-compatible object storage, and a tiered hot/cold combination in the
// sub-packages).
//
// A store keeps one opaque blob per session id. The session package decides
// what the blob contains (docs/state-format.md); stores only keep bytes,
// versions and timestamps.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Errors, for use with errors.Is.
var (
	// ErrNotFound: no blob is stored under the id (or it expired).
	ErrNotFound = errors.New("store: session state not found")
	// ErrConflict: a conditional Put lost a race: the stored version is not
	// the one the caller read. Read again and retry, or report the conflict.
	ErrConflict = errors.New("store: concurrent update conflict")
	// ErrInvalidID: ids are 1 to 200 characters of letters, digits and . _ - : /
	// and may not contain "..".
	ErrInvalidID = errors.New("store: invalid session id")
	// ErrUnavailable wraps failures to reach a backend (network, disk).
	ErrUnavailable = errors.New("store: backend unavailable")
	// ErrUnreadable: an entry is damaged. The backend answered, but what it
	// holds there cannot be read as a blob of this store: a garbage or
	// truncated file, a file this process may not read, a Redis key of
	// another type, an object or hash with missing or garbled metadata, a
	// blob that does not match its checksum.
	//
	// List matches it with an *UnreadableError, returned together with the
	// entries it could read (see Store.List). Get and Stat of a damaged id
	// return an error that matches both ErrUnreadable and, as damage was
	// reported before ErrUnreadable existed, ErrUnavailable. Deleting the id
	// removes the damaged entry.
	ErrUnreadable = errors.New("store: unreadable entry")
)

// Info describes a stored blob.
type Info struct {
	ID     string
	Size   int64
	SHA256 string // hex
	// Version changes on every Put; pass it to Put as IfVersion for
	// compare-and-set. Opaque.
	Version  string
	Created  time.Time
	Modified time.Time
	// Expires is zero when the blob never expires.
	Expires time.Time
	// Source names the backend that served it ("memory", "dir", "redis",
	// "s3", and for the tiered store "hot" or "archive").
	Source string
}

// Object is a blob with its info.
type Object struct {
	Data []byte
	Info Info
}

// Cond makes a Put conditional. The zero value writes unconditionally.
type Cond struct {
	// IfVersion, when set, requires the stored version to equal it.
	IfVersion string
	// IfAbsent requires that nothing is stored under the id.
	IfAbsent bool
}

// Store keeps session blobs. Implementations are safe for concurrent use,
// including from several processes sharing a backend: a conditional Put
// that lost a race fails with ErrConflict rather than losing an update.
type Store interface {
	// Get returns the blob stored under id, or ErrNotFound.
	Get(ctx context.Context, id string) (Object, error)
	// Put stores data under id if cond holds (else ErrConflict) and returns
	// the new info.
	Put(ctx context.Context, id string, data []byte, cond Cond) (Info, error)
	// Delete removes the blob; deleting a missing id is not an error.
	Delete(ctx context.Context, id string) error
	// Stat returns the info of the blob under id, or ErrNotFound.
	Stat(ctx context.Context, id string) (Info, error)
	// List returns the info of every stored blob, sorted by id.
	//
	// Entries it cannot read (see ErrUnreadable) do not make it fail: it
	// skips them and returns the readable ones together with an
	// *UnreadableError naming the skipped ones; the list is then complete
	// but for those. Any other error (the backend is unreachable, the
	// directory is missing, ctx ended) fails the whole call and comes with
	// no list. Callers that can go on without the damaged entries use
	// SplitListError:
	//
	//	infos, err := st.List(ctx)
	//	skipped, err := store.SplitListError(err)
	//	if err != nil {
	//		return err // nothing was listed
	//	}
	//	for _, sk := range skipped {
	//		log.Printf("skipping %s: %v", sk.Name(), sk.Err)
	//	}
	//
	// A caller that only checks err != nil keeps failing on damage, as
	// before. Names the store never produces (a stray file, a key with an
	// invalid id, an object key of another layout) are not entries: they
	// are ignored, not reported.
	List(ctx context.Context) ([]Info, error)
	// Close releases connections and files.
	Close() error
}

// Salvager is implemented by stores that can hand over an entry they
// cannot read as a blob (see ErrUnreadable), so that a caller can keep its
// bytes aside and then replace the entry without losing a concurrent
// update. The session package does this before it starts a session whose
// stored state is damaged afresh (session.Options.FreshOnCorrupt).
type Salvager interface {
	// Salvage returns the bytes stored under id as they are, whatever they
	// hold (for the directory store: the whole file, header included), and
	// a token that, passed to Put as Cond.IfVersion, replaces exactly this
	// entry: Put fails with ErrConflict once the entry was changed or
	// removed. It returns ErrNotFound when nothing is stored under id, an
	// error matching ErrUnreadable when the entry cannot be read even as
	// bytes (no permission, not a file) or is larger than max bytes, and
	// ErrUnavailable for failures of the backend.
	Salvage(ctx context.Context, id string, max int64) (data []byte, token string, err error)
}

// LeaseSuffix ends the id of a lease: a short-lived entry that claims
// another one for a holder (the session package's claims, session.LeaseID).
// A tiered store keeps leases in its hot tier only.
const LeaseSuffix = ":lease"

// IsLease reports whether id is a lease's (LeaseSuffix).
func IsLease(id string) bool { return strings.HasSuffix(id, LeaseSuffix) }

// CheckID returns ErrInvalidID (wrapped, naming the id) unless id is valid.
func CheckID(id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %q (use 1-200 letters, digits and . _ - : /, no . or .. segments)", ErrInvalidID, id)
	}
	return nil
}

// validID reports whether id is 1 to 200 of A-Z a-z 0-9 . _ - : / with no
// "." or ".." segment (between slashes or the ends). A loop rather than a
// regexp: compiling one at init is time every process start pays.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._:/-", c) >= 0) {
			return false
		}
	}
	for seg := range strings.SplitSeq(id, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Checksum returns the hex SHA-256 of data, as Info.SHA256 holds it.
func Checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Skipped is an entry that List could not read.
type Skipped struct {
	// ID is the session id of the entry, or "" when the entry does not
	// reveal it (a directory store's file is named by a hash of the id, and
	// its id is in the header that could not be read).
	ID string
	// Key names the entry in the backend: a file path, a Redis key, an
	// object key; the id when the backend has no other name for it (a
	// tiered store's blob that is not an envelope).
	Key string
	// Err says what is wrong; it matches ErrUnreadable.
	Err error
}

// Name is the ID of the entry in quotes, or its Key when the ID is not
// known: for messages.
func (s Skipped) Name() string {
	if s.ID != "" {
		return fmt.Sprintf("session %q", s.ID)
	}
	return s.Key
}

// UnreadableError is the error List returns, together with the entries it
// could read, when it skipped entries it could not read. It matches
// ErrUnreadable (and not ErrUnavailable: the backend answered).
type UnreadableError struct {
	// Skipped lists the entries left out, sorted by ID, then Key.
	Skipped []Skipped
}

// NewUnreadableError returns an *UnreadableError for the skipped entries
// (sorted), or nil when there are none: what a List implementation returns
// as its error once the readable entries are listed.
func NewUnreadableError(skipped []Skipped) error {
	if len(skipped) == 0 {
		return nil
	}
	sorted := append([]Skipped(nil), skipped...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].ID != sorted[j].ID {
			return sorted[i].ID < sorted[j].ID
		}
		return sorted[i].Key < sorted[j].Key
	})
	return &UnreadableError{Skipped: sorted}
}

// Error names the skipped entries and why (the first three in full).
func (e *UnreadableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d skipped by List", ErrUnreadable, len(e.Skipped))
	for i, sk := range e.Skipped {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Skipped)-i)
			break
		}
		fmt.Fprintf(&b, "; %s: %v", sk.Name(), sk.Err)
	}
	return b.String()
}

// Is reports whether target is ErrUnreadable. The errors of the single
// entries are not wrapped, so that an UnreadableError never matches
// ErrUnavailable.
func (e *UnreadableError) Is(target error) bool { return target == ErrUnreadable }

// SplitListError splits the error of a List call into the entries it
// skipped (when err is an *UnreadableError, possibly wrapped with %w: the
// list is valid, but for those) and a failure of the whole call (any other
// non-nil err, joined errors included: there is no list). A nil err yields
// nil, nil.
func SplitListError(err error) (skipped []Skipped, fatal error) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ue, ok := e.(*UnreadableError); ok {
			return ue.Skipped, nil
		}
	}
	return nil, err
}

// Backend names st's backend for traces and metrics: what its Backend
// method returns ("memory", "dir", "redis", "s3", "tiered"), or its Go
// type for a store without one.
func Backend(st Store) string {
	if b, ok := st.(interface{ Backend() string }); ok {
		return b.Backend()
	}
	return fmt.Sprintf("%T", st)
}
