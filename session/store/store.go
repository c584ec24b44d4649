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
	"regexp"
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
	List(ctx context.Context) ([]Info, error)
	// Close releases connections and files.
	Close() error
}

var (
	validID    = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,200}$`)
	dotSegment = regexp.MustCompile(`(^|/)\.\.?(/|$)`)
)

// CheckID returns ErrInvalidID (wrapped, naming the id) unless id is valid.
func CheckID(id string) error {
	if !validID.MatchString(id) || dotSegment.MatchString(id) {
		return fmt.Errorf("%w: %q (use 1-200 letters, digits and . _ - : /, no . or .. segments)", ErrInvalidID, id)
	}
	return nil
}

// Checksum returns the hex SHA-256 of data, as Info.SHA256 holds it.
func Checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
