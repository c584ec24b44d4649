// Package dirstore is a store.Store in a local directory: the CLI's default.
// It survives restarts and crashes, and several processes may share one
// directory.
//
// # Layout
//
// Each id maps to the name H = hex(SHA-256(id)), so no id can name a path
// outside the directory, ids that differ only in case stay apart on
// case-insensitive file systems, and long ids fit the file name limit.
// The directory holds, per id:
//
//	H.session  the blob: a header followed by the data
//	H.lock     the lock file that serializes writers of the id
//
// and, while a Put is in progress, a temporary file .tmp-H-RANDOM.
//
// A .session file starts with the line "monty-session-v1", then one line
// of JSON with the id, version, creation, modification and expiry times
// (Unix nanoseconds), size and SHA-256 of the data, then the data itself.
// Keeping the metadata in the same file as the data means that one rename
// replaces both at once: there is no window where they disagree.
//
// # Durability
//
// Put writes the new file under a temporary name, fsyncs it, renames it over
// H.session and fsyncs the directory. A crash at any point leaves either
// the previous complete blob or the new one; never a torn file. Leftover
// temporary files are never read as sessions and are removed by Open once
// they are older than an hour. Get verifies size and checksum anyway and
// reports a mismatch as store.ErrUnreadable (which matches
// store.ErrUnavailable too); List skips and reports such files (see List).
//
// # Damaged files
//
// A .session file that is not what Put wrote (truncated, garbage, written
// by something else, a directory or another non-regular file in its place,
// a file this process may not read) is damage to that one entry, never an
// outage of the store: Get and Stat report it as store.ErrUnreadable, List
// skips and reports it. Salvage hands over its bytes with a token that
// lets Put replace exactly that file, so a caller can keep the bytes aside
// and start the session afresh (the session package does, with
// session.Options.FreshOnCorrupt) without overwriting a concurrent repair.
//
// # Concurrency
//
// Writers of an id (Put, Delete, and the lazy removal of an expired blob)
// hold an exclusive lock on H.lock: flock(2) on Unix-like systems, LockFileEx
// on Windows. The lock is taken per open file, so it serializes goroutines
// of one process and separate processes alike, and it is released by the
// kernel when a process dies. Compare-and-set reads the current version
// under that lock, so two processes racing on one id never lose an update:
// one of them gets store.ErrConflict. Readers take no lock: they see the
// file before or after a rename, both complete. Delete removes the lock
// file too (a writer that locked a file that was removed meanwhile notices
// and locks the new one). On Windows lock files are kept, and a rename that
// collides with a reader holding the file open is retried for up to a
// second. On systems other than Unix and Windows the lock only works
// within one process.
package dirstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/internal/storeutil"
)

// Source is the Info.Source of blobs served by this store.
const Source = "dir"

const (
	magic        = "monty-session-v1\n"
	dataSuffix   = ".session"
	lockSuffix   = ".lock"
	tempPrefix   = ".tmp-"
	maxHeader    = 4096
	staleTempAge = time.Hour
)

// Options configures a Store.
type Options struct {
	// TTL, when positive, makes a blob expire TTL after its last Put. The
	// expiry time is kept in the file, so it holds across restarts. Expired
	// blobs behave as absent and their files are removed lazily (when next
	// touched, or by List). Zero keeps blobs until deleted.
	TTL time.Duration
}

// Store keeps one file per id in a directory. It is safe for concurrent use
// by multiple goroutines and by multiple processes sharing the directory
// (see the package documentation).
type Store struct {
	dir    string
	ttl    time.Duration
	closed atomic.Bool
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Salvager = (*Store)(nil)
)

// Open returns a store in dir, creating the directory (mode 0700) if needed,
// and removes temporary files left behind by writers that died more than
// an hour ago.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: dirstore: no directory given", store.ErrUnavailable)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, unavailable("resolve directory", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, unavailable("create directory", abs, err)
	}
	s := &Store{dir: abs, ttl: opts.TTL}
	if err := s.removeStaleTemps(staleTempAge); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// header is the JSON line that precedes the data in a .session file.
type header struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Created  int64  `json:"created"`
	Modified int64  `json:"modified"`
	Expires  int64  `json:"expires,omitempty"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

func (h *header) info() store.Info {
	return store.Info{
		ID:       h.ID,
		Size:     h.Size,
		SHA256:   h.SHA256,
		Version:  h.Version,
		Created:  storeutil.FromUnixNano(h.Created),
		Modified: storeutil.FromUnixNano(h.Modified),
		Expires:  storeutil.FromUnixNano(h.Expires),
		Source:   Source,
	}
}

func (h *header) expired(now time.Time) bool {
	return storeutil.Expired(storeutil.FromUnixNano(h.Expires), now)
}

// name maps an id to the base name of its files.
func name(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func (s *Store) dataPath(n string) string { return filepath.Join(s.dir, n+dataSuffix) }
func (s *Store) lockPath(n string) string { return filepath.Join(s.dir, n+lockSuffix) }

func (s *Store) begin(ctx context.Context, id string) error {
	if err := store.CheckID(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return storeutil.Closed("dir")
	}
	return nil
}

func unavailable(op, path string, err error) error {
	return fmt.Errorf("%w: dirstore: %s %s: %v (check that the directory exists, is writable and the disk is not full)",
		store.ErrUnavailable, op, path, err)
}

// corrupt reports a damaged file: store.ErrUnreadable (and, as before,
// store.ErrUnavailable).
func corrupt(path, why string) error {
	return storeutil.Unreadable("dirstore: %s is corrupt: %s (delete the file or restore it from a backup)", path, why)
}

// errMissing reports a missing file internally.
var errMissing = errors.New("missing")

// openEntry opens the .session file at path and reads its header, checking
// it against the file's size. A missing file yields errMissing; a damaged
// file, or one this process may not read, an error matching
// store.ErrUnreadable (with the header when it could be read, so that the
// caller can name the id); any other failure store.ErrUnavailable. On
// success the caller reads the data from r and closes f.
func openEntry(path string) (f *os.File, r *bufio.Reader, h *header, err error) {
	f, err = os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil, errMissing
	case errors.Is(err, fs.ErrPermission):
		return nil, nil, nil, storeutil.Unreadable("dirstore: cannot read %s: %v (fix its permissions, or delete it)", path, err)
	case err != nil:
		return nil, nil, nil, unavailable("open", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, unavailable("stat", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, nil, corrupt(path, "not a regular file")
	}
	r = bufio.NewReaderSize(f, maxHeader)
	h, hlen, err := parseHeader(r)
	if err != nil {
		return nil, nil, nil, corrupt(path, err.Error())
	}
	if got := fi.Size() - int64(hlen); got != h.Size {
		return nil, nil, h, corrupt(path, fmt.Sprintf("%d bytes of data, header says %d", got, h.Size))
	}
	return f, r, h, nil
}

// readFile reads the header of the file for id and, when withData, the
// data. A missing file yields errMissing.
func (s *Store) readFile(id string, withData bool) (*header, []byte, error) {
	path := s.dataPath(name(id))
	f, r, h, err := openEntry(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if h.ID != id {
		return nil, nil, corrupt(path, fmt.Sprintf("it holds id %q, not %q", h.ID, id))
	}
	if !withData {
		return h, nil, nil
	}
	data := make([]byte, h.Size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, nil, unavailable("read", path, err)
	}
	if store.Checksum(data) != h.SHA256 {
		return nil, nil, corrupt(path, "checksum mismatch")
	}
	return h, data, nil
}

func parseHeader(r *bufio.Reader) (*header, int, error) {
	line1, err := r.ReadSlice('\n')
	if err != nil || string(line1) != magic {
		return nil, 0, errors.New("not a session file")
	}
	line2, err := r.ReadSlice('\n')
	if err != nil {
		return nil, 0, errors.New("header incomplete")
	}
	var h header
	if err := json.Unmarshal(line2, &h); err != nil {
		return nil, 0, fmt.Errorf("header: %v", err)
	}
	return &h, len(line1) + len(line2), nil
}

// Get returns the blob under id, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (store.Object, error) {
	h, data, err := s.readLive(ctx, id, true)
	if err != nil {
		return store.Object{}, err
	}
	return store.Object{Data: data, Info: h.info()}, nil
}

// Stat returns the info of the blob under id, or store.ErrNotFound. It reads
// only the header.
func (s *Store) Stat(ctx context.Context, id string) (store.Info, error) {
	h, _, err := s.readLive(ctx, id, false)
	if err != nil {
		return store.Info{}, err
	}
	return h.info(), nil
}

// readLive is readFile for Get and Stat: a missing or expired blob is
// store.ErrNotFound, and an expired one is dropped.
func (s *Store) readLive(ctx context.Context, id string, withData bool) (*header, []byte, error) {
	if err := s.begin(ctx, id); err != nil {
		return nil, nil, err
	}
	h, data, err := s.readFile(id, withData)
	if err == errMissing {
		return nil, nil, storeutil.NotFound(id)
	}
	if err != nil {
		return nil, nil, err
	}
	if h.expired(storeutil.Now()) {
		s.dropExpired(ctx, id)
		return nil, nil, storeutil.NotFound(id)
	}
	return h, data, nil
}

// dropExpired removes the file of id if it is still expired once the lock
// is held (a concurrent Put may have replaced it). Failures are ignored:
// the blob reads as absent either way.
func (s *Store) dropExpired(ctx context.Context, id string) {
	n := name(id)
	lk, err := lock(ctx, s.lockPath(n))
	if err != nil {
		return
	}
	defer lk.unlock()
	h, _, err := s.readFile(id, false)
	if err == nil && h.expired(storeutil.Now()) {
		if os.Remove(s.dataPath(n)) == nil {
			_ = syncDir(s.dir)
		}
	}
}

// Put stores data under id if cond holds, else it returns store.ErrConflict.
// It holds the id's lock while it checks cond and replaces the file. A
// conditional Put over a damaged file fails with its store.ErrUnreadable
// error, unless cond.IfVersion is the token Salvage returned for that very
// file.
func (s *Store) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	if err := s.begin(ctx, id); err != nil {
		return store.Info{}, err
	}
	n := name(id)
	lk, err := lock(ctx, s.lockPath(n))
	if err != nil {
		return store.Info{}, err
	}
	defer lk.unlock()

	now := storeutil.Now()
	if token, ok := strings.CutPrefix(cond.IfVersion, salvagePrefix); ok {
		// Replacing an entry handed over by Salvage: exactly that one.
		if err := checkSalvaged(s.dataPath(n), id, token); err != nil {
			return store.Info{}, err
		}
		h := newHeader(id, data, now, s.ttl)
		if err := s.writeFile(n, &h, data); err != nil {
			return store.Info{}, err
		}
		return h.info(), nil
	}
	old, _, err := s.readFile(id, false)
	switch {
	case err == errMissing:
		old = nil
	case err != nil && cond != (store.Cond{}):
		return store.Info{}, err
	case err != nil:
		old = nil // an unconditional Put replaces a corrupt file
	case old.expired(now):
		old = nil
	}
	exists, version := old != nil, ""
	if exists {
		version = old.Version
	}
	if err := storeutil.Check(id, cond, exists, version); err != nil {
		return store.Info{}, err
	}
	h := newHeader(id, data, now, s.ttl)
	if old != nil {
		h.Created = old.Created
		if h.Modified <= old.Modified { // keep Modified strictly increasing
			h.Modified = old.Modified + 1
		}
	}
	if err := s.writeFile(n, &h, data); err != nil {
		return store.Info{}, err
	}
	return h.info(), nil
}

// newHeader is the header of data stored under id at now, with a fresh
// version.
func newHeader(id string, data []byte, now time.Time, ttl time.Duration) header {
	return header{
		ID:       id,
		Version:  storeutil.NewVersion(),
		Created:  now.UnixNano(),
		Modified: now.UnixNano(),
		Expires:  storeutil.UnixNano(storeutil.Expiry(now, ttl)),
		Size:     int64(len(data)),
		SHA256:   store.Checksum(data),
	}
}

// salvagePrefix starts the tokens Salvage returns, which Put takes as
// Cond.IfVersion (versions of readable blobs are plain hex).
const salvagePrefix = "salvaged-"

// salvageToken names the exact bytes of a file: its size and SHA-256.
func salvageToken(raw []byte) string {
	return fmt.Sprintf("%s%d-%s", salvagePrefix, len(raw), store.Checksum(raw))
}

// Salvage returns the whole .session file of id as it is (header and
// data), readable or not, and a token that Put accepts as Cond.IfVersion
// to replace exactly that file (see store.Salvager). A missing file is
// store.ErrNotFound; one this process may not read, a directory or other
// non-regular file, or a file of more than max bytes, an error matching
// store.ErrUnreadable: move it away by hand.
func (s *Store) Salvage(ctx context.Context, id string, max int64) ([]byte, string, error) {
	if err := s.begin(ctx, id); err != nil {
		return nil, "", err
	}
	path := s.dataPath(name(id))
	raw, err := readRaw(path, max)
	if err == errMissing {
		return nil, "", storeutil.NotFound(id)
	}
	if err != nil {
		return nil, "", err
	}
	return raw, salvageToken(raw), nil
}

// readRaw reads the file at path, of at most max bytes, without opening
// anything but a regular file (a named pipe would block). A missing file
// yields errMissing.
func readRaw(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, rawError("stat", path, err)
	case !fi.Mode().IsRegular():
		return nil, storeutil.Unreadable("dirstore: %s is not a regular file and cannot be read or replaced (move it away)", path)
	case fi.Size() > max:
		return nil, storeutil.Unreadable("dirstore: %s is %d bytes, more than the %d that may be read from a damaged file (move it away)", path, fi.Size(), max)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, rawError("open", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, storeutil.Unreadable("dirstore: %s is not a regular file and cannot be read or replaced (move it away)", path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, unavailable("read", path, err)
	}
	if int64(len(raw)) > max {
		return nil, storeutil.Unreadable("dirstore: %s is more than the %d bytes that may be read from a damaged file (move it away)", path, max)
	}
	return raw, nil
}

// rawError is readRaw's error for op (stat or open) failing on path: a
// missing file yields errMissing.
func rawError(op, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errMissing
	case errors.Is(err, fs.ErrPermission):
		return storeutil.Unreadable("dirstore: cannot read %s: %v (fix its permissions, or move it away)", path, err)
	}
	return unavailable(op, path, err)
}

// checkSalvaged holds when the file at path is still the one a Salvage
// token names; else it returns store.ErrConflict. The caller holds the
// id's lock.
func checkSalvaged(path, id, token string) error {
	size, _, ok := strings.Cut(token, "-")
	n, err := strconv.ParseInt(size, 10, 64)
	if !ok || err != nil || n < 0 {
		return storeutil.Conflict(id, "the token "+salvagePrefix+token+" does not come from Salvage")
	}
	raw, err := readRaw(path, n)
	switch {
	case err == errMissing:
		return storeutil.Conflict(id, "the salvaged entry no longer exists (Put with a Salvage token)")
	case errors.Is(err, store.ErrUnreadable):
		// Larger than it was, or no longer a file: changed.
		return storeutil.Conflict(id, "the salvaged entry was changed since it was read")
	case err != nil:
		return err
	case salvageToken(raw) != salvagePrefix+token:
		return storeutil.Conflict(id, "the salvaged entry was changed since it was read")
	}
	return nil
}

// writeFile atomically replaces the .session file of name n.
func (s *Store) writeFile(n string, h *header, data []byte) (err error) {
	line, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("dirstore: encode header: %v", err)
	}
	f, err := os.CreateTemp(s.dir, tempPrefix+n+"-*")
	if err != nil {
		return unavailable("create temporary file in", s.dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	var buf bytes.Buffer
	buf.Grow(len(magic) + len(line) + 1)
	buf.WriteString(magic)
	buf.Write(line)
	buf.WriteByte('\n')
	if _, err = f.Write(buf.Bytes()); err != nil {
		return unavailable("write", tmp, err)
	}
	if _, err = f.Write(data); err != nil {
		return unavailable("write", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return unavailable("sync", tmp, err)
	}
	if err = f.Close(); err != nil {
		return unavailable("close", tmp, err)
	}
	if err = rename(tmp, s.dataPath(n)); err != nil {
		return unavailable("rename", tmp, err)
	}
	if err = syncDir(s.dir); err != nil {
		return unavailable("sync directory", s.dir, err)
	}
	return nil
}

// Delete removes the blob under id; a missing id is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.begin(ctx, id); err != nil {
		return err
	}
	n := name(id)
	lk, err := lock(ctx, s.lockPath(n))
	if err != nil {
		return err
	}
	defer lk.unlock()
	err = os.Remove(s.dataPath(n))
	if errors.Is(err, fs.ErrNotExist) {
		lk.remove()
		return nil
	}
	if err != nil {
		return unavailable("remove", s.dataPath(n), err)
	}
	if err := syncDir(s.dir); err != nil {
		return unavailable("sync directory", s.dir, err)
	}
	lk.remove()
	return nil
}

// List returns the info of every live blob, sorted by id, and removes the
// files of expired ones. Temporary and lock files, and files whose names
// the store never produces, are ignored.
//
// A .session file that cannot be read (not a session file, a truncated or
// garbled header, data shorter or longer than the header says, a header
// naming an id that belongs in another file, no permission to read it, not
// a regular file) is skipped and reported in a *store.UnreadableError
// returned with the readable entries; its Skipped.ID is set when the header
// could be read. List reads headers and file sizes, not the data: a
// checksum mismatch shows at Get. Failing to read the directory, or an I/O
// error other than a missing permission, fails the whole call.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, storeutil.Closed("dir")
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, unavailable("read directory", s.dir, err)
	}
	now := storeutil.Now()
	list := []store.Info{}
	var skipped []store.Skipped
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), dataSuffix)
		if !ok || !isName(base) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		path := filepath.Join(s.dir, e.Name())
		h, err := listEntry(path, base, e.Type())
		switch {
		case err == errMissing:
			continue // deleted meanwhile
		case errors.Is(err, store.ErrUnreadable):
			sk := store.Skipped{Key: path, Err: err}
			if h != nil && name(h.ID) == base {
				sk.ID = h.ID
			}
			skipped = append(skipped, sk)
			continue
		case err != nil:
			return nil, err
		}
		if h.expired(now) {
			s.dropExpired(ctx, h.ID)
			continue
		}
		list = append(list, h.info())
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list, store.NewUnreadableError(skipped)
}

// listEntry reads the header of the file at path, named base+".session",
// of type typ (as the directory listing has it), for List; errors as
// openEntry's. A header may come with an error.
func listEntry(path, base string, typ fs.FileMode) (*header, error) {
	if !typ.IsRegular() && typ&fs.ModeSymlink == 0 {
		// Not opened: opening a named pipe would block.
		return nil, corrupt(path, "not a regular file")
	}
	f, _, h, err := openEntry(path)
	if err != nil {
		return h, err
	}
	_ = f.Close()
	if name(h.ID) != base {
		return nil, corrupt(path, fmt.Sprintf("it holds id %q, whose file has another name", h.ID))
	}
	return h, nil
}

func isName(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// removeStaleTemps removes temporary files older than age: they belong to
// writers that died (a live writer finishes in far less time).
func (s *Store) removeStaleTemps(age time.Duration) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return unavailable("read directory", s.dir, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		fi, err := e.Info()
		if err == nil && time.Since(fi.ModTime()) > age {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
	return nil
}

// Backend names the backend in traces and metrics: Source.
func (s *Store) Backend() string { return Source }

// Close marks the store closed; later calls fail with store.ErrUnavailable.
// The store holds no open files between calls.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
