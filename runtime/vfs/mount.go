package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// DefaultMountMemoryLimit is the memory budget of a mount whose options
// leave it zero, in bytes: what an OverlayFS may keep in memory (its files,
// directories and deletions) together with the file read in progress, and
// the largest file a DirFS reads. It is monty-fs's DEFAULT_MEMORY_USAGE_LIMIT.
const DefaultMountMemoryLimit = 50_000_000

var (
	// ErrMountWriteLimit matches (errors.Is) the error a mount returns when
	// a write would take the bytes written through it past its write limit.
	// The code sees OSError("disk write limit of … exceeded"), as monty-fs
	// raises it.
	ErrMountWriteLimit = errors.New("monty: mount write limit exceeded")
	// ErrMountMemoryLimit matches (errors.Is) the error a mount returns when
	// an operation would take its memory past its budget. The code sees
	// MemoryError("mount memory usage limit of … exceeded"), as monty-fs
	// raises it.
	ErrMountMemoryLimit = errors.New("monty: mount memory limit exceeded")
)

// mountLimitError is the Python exception a mount limit raises, matching
// its sentinel with errors.Is.
type mountLimitError struct {
	exc  runtime.Exception
	kind error
}

func (e *mountLimitError) Error() string   { return e.exc.Error() }
func (e *mountLimitError) Unwrap() []error { return []error{&e.exc, e.kind} }

func writeLimitError(limit int64) error {
	return &mountLimitError{
		exc:  runtime.Exception{Type: "OSError", Message: "disk write limit of " + formatBytesPretty(limit) + " exceeded"},
		kind: ErrMountWriteLimit,
	}
}

func memoryLimitError(limit int64) error {
	return &mountLimitError{
		exc:  runtime.Exception{Type: "MemoryError", Message: "mount memory usage limit of " + formatBytesPretty(limit) + " exceeded"},
		kind: ErrMountMemoryLimit,
	}
}

// formatBytesPretty spells a byte count in decimal SI units as monty-fs
// does in its limit messages: "512 bytes", "1 KB", "1.5 MB".
func formatBytesPretty(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	units := []struct {
		size float64
		name string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}}
	for _, u := range units {
		if float64(n) >= u.size || u.name == "KB" {
			v := float64(n) / u.size
			if math.Mod(math.Round(v*10), 10) == 0 {
				return strconv.FormatFloat(v, 'f', 0, 64) + " " + u.name
			}
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u.name
		}
	}
	return "" // not reached
}

// writeQuota counts the bytes written through a mount against its limit.
// Bytes are spent, never given back: truncating or deleting a file does not
// refund them (monty-fs's write_bytes_used only grows). A nil quota is no
// limit.
type writeQuota struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

func newWriteQuota(limit int64) *writeQuota {
	if limit <= 0 {
		return nil
	}
	return &writeQuota{limit: limit}
}

// reserve spends n bytes, or refuses with the write limit exception when
// they do not fit.
func (q *writeQuota) reserve(n int64) error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if n < 0 || n > q.limit-q.used {
		return writeLimitError(q.limit)
	}
	q.used += n
	return nil
}

// refund gives back bytes reserved for a write that wrote nothing.
func (q *writeQuota) refund(n int64) {
	if q == nil {
		return
	}
	q.mu.Lock()
	q.used -= n
	q.mu.Unlock()
}

func (q *writeQuota) spent() int64 {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
}

// MountMode says how a mount exposes its host directory to the code. It is
// a plain value.
type MountMode int

const (
	// MountReadOnly serves reads; every write raises PermissionError
	// "[Errno 30] Read-only file system". The default, as in monty's CLI.
	MountReadOnly MountMode = iota
	// MountReadWrite lets the code change the host directory (a DirFS).
	// What it writes is untrusted: never execute or import it on the host.
	MountReadWrite
	// MountOverlay reads through to the host directory and keeps every
	// change in memory (an OverlayFS): the host directory never changes.
	MountOverlay
)

// String returns the mode as a mount spec spells it: ro, rw or overlay.
func (m MountMode) String() string {
	switch m {
	case MountReadOnly:
		return "ro"
	case MountReadWrite:
		return "rw"
	case MountOverlay:
		return "overlay"
	}
	return "MountMode(" + strconv.Itoa(int(m)) + ")"
}

// parseMountMode reads a mode: ro, rw, overlay, or monty-fs's long names
// read-only and read-write.
func parseMountMode(s string) (MountMode, bool) {
	switch s {
	case "ro", "read-only":
		return MountReadOnly, true
	case "rw", "read-write":
		return MountReadWrite, true
	case "overlay":
		return MountOverlay, true
	}
	return 0, false
}

// MountSpec describes a host directory to mount: which one, where the code
// sees it, how, and within which limits. ParseMount reads one from the
// command-line form; Open opens it. A MountSpec is a plain value, safe to
// copy and to use from several goroutines.
type MountSpec struct {
	// Host is the host directory. Only the operator names it: code in the
	// sandbox only ever sees Guest.
	Host string
	// Guest is the absolute virtual path the code sees the directory at,
	// such as "/data".
	Guest string
	// Mode is read-only (the zero value), read-write or overlay.
	Mode MountMode
	// WriteLimit caps the bytes the code may write through the mount in
	// all (0: no limit), for read-write and overlay mounts.
	WriteLimit int64
	// MemoryLimit is the mount's memory budget (0: DefaultMountMemoryLimit);
	// see OverlayOptions and DirFSOptions.
	MemoryLimit int64
}

// String returns the spec in ParseMount's form, HOST:GUEST:MODE (limits
// are not part of that form).
func (s MountSpec) String() string { return s.Host + ":" + s.Guest + ":" + s.Mode.String() }

// mountSyntax is the accepted spec forms, for error messages.
const mountSyntax = "want HOST:GUEST[:ro|rw|overlay], or monty's HOST::GUEST[::MODE[::WRITE_LIMIT_BYTES]]"

// ParseMount reads a mount spec "HOST:GUEST[:MODE]": the host directory,
// the absolute path the code sees it at, and the mode, ro (the default, as
// in monty's own CLI), rw or overlay. HOST may itself contain colons (a
// Windows drive): the guest is the last field that starts with "/".
// monty's own CLI form, "HOST::GUEST[::MODE[::WRITE_LIMIT_BYTES]]", is
// accepted too. The host must be an existing directory.
//
// A malformed spec returns an error matching ErrInvalidOption that names
// the part that is wrong.
func ParseMount(spec string) (MountSpec, error) {
	bad := func(format string, args ...any) (MountSpec, error) {
		return MountSpec{}, fmt.Errorf("%w: mount %q: %s", runtime.ErrInvalidOption, spec, fmt.Sprintf(format, args...))
	}
	var s MountSpec
	mode := ""
	if strings.Contains(spec, "::") {
		parts := strings.Split(spec, "::")
		if len(parts) > 4 {
			return bad("too many fields (%s)", mountSyntax)
		}
		s.Host, s.Guest = parts[0], parts[1]
		if len(parts) > 2 {
			mode = parts[2]
			if mode == "" {
				return bad("the mode is empty (use ro, rw or overlay)")
			}
		}
		if len(parts) > 3 {
			n, err := strconv.ParseInt(parts[3], 10, 64)
			if err != nil || n < 0 {
				return bad("write limit %q is not a whole number of bytes", parts[3])
			}
			s.WriteLimit = n
		}
	} else {
		i := strings.LastIndex(spec, ":")
		if i < 0 {
			return bad("missing the guest path (%s)", mountSyntax)
		}
		last := spec[i+1:]
		// HOST:GUEST:MODE: a last field without a slash is the mode (a
		// guest path always has one).
		if strings.Count(spec, ":") >= 2 && !strings.Contains(last, "/") {
			mode = last
			if mode == "" {
				return bad("the mode after the last colon is empty (use ro, rw or overlay)")
			}
			spec := spec[:i]
			if i = strings.LastIndex(spec, ":"); i < 0 {
				return bad("missing the guest path (%s)", mountSyntax)
			}
			last = spec[i+1:]
		}
		s.Host, s.Guest = spec[:i], last
	}
	if mode != "" {
		m, ok := parseMountMode(mode)
		if !ok {
			return bad("unknown mode %q (use ro, rw or overlay)", mode)
		}
		s.Mode = m
	}
	if err := s.check(); err != nil {
		return bad("%s", err)
	}
	return s, nil
}

// check validates the fields, cleaning Guest.
func (s *MountSpec) check() error {
	switch {
	case s.Guest == "":
		return fmt.Errorf("missing the guest path (%s)", mountSyntax)
	case !strings.HasPrefix(s.Guest, "/"):
		return fmt.Errorf("guest path %q must be absolute (start with /)", s.Guest)
	case strings.ContainsRune(s.Guest, 0):
		return errors.New("guest path contains a NUL byte")
	case checkPathLength(s.Guest) != nil:
		return fmt.Errorf("guest path %q is longer than the sandbox allows (4096 bytes, 255 per name, 64 names)", elide(s.Guest))
	case s.Host == "":
		return errors.New("the host directory is empty")
	case strings.ContainsRune(s.Host, 0):
		return errors.New("host path contains a NUL byte")
	case s.Mode < MountReadOnly || s.Mode > MountOverlay:
		return fmt.Errorf("unknown mode %v", s.Mode)
	case s.WriteLimit < 0 || s.MemoryLimit < 0:
		return errors.New("limits must not be negative")
	}
	s.Guest = path.Clean(s.Guest)
	fi, err := os.Stat(s.Host)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("host directory %q does not exist", s.Host)
	case err != nil:
		return fmt.Errorf("host directory %q: %v", s.Host, errors.Unwrap(err))
	case !fi.IsDir():
		return fmt.Errorf("host path %q is not a directory", s.Host)
	}
	return nil
}

// MountHandler is an opened mount: it serves the file OS calls under its
// mount point and holds its host directory open until closed. DirFS,
// OverlayFS and MountTable are MountHandlers; all are safe for concurrent
// use, as an OSHandler shared between runs must be.
type MountHandler interface {
	runtime.OSHandler
	io.Closer
}

// Open opens the spec's host directory: a read-only or read-write DirFS, or
// an OverlayFS. It checks the spec as ParseMount does (errors match
// ErrInvalidOption). Close the result when done.
func (s MountSpec) Open() (MountHandler, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: mount %s: %v", runtime.ErrInvalidOption, s, err)
	}
	switch s.Mode {
	case MountOverlay:
		return OpenOverlayFS(s.Host, s.Guest, OverlayOptions{WriteLimit: s.WriteLimit, MemoryLimit: s.MemoryLimit})
	case MountReadWrite:
		return OpenDirFS(s.Host, s.Guest, DirFSOptions{ReadWrite: true, WriteLimit: s.WriteLimit, MemoryLimit: s.MemoryLimit})
	}
	return OpenDirFS(s.Host, s.Guest, DirFSOptions{MemoryLimit: s.MemoryLimit})
}

// MountTable serves several mounts: each file OS call goes to the mount
// with the longest mount point that contains its path (so /data/sub wins
// over /data for /data/sub/x). It is safe for concurrent use, and so are
// its mounts. Its methods accept a nil *MountTable, which serves nothing.
type MountTable struct {
	mounts    []tableEntry // longest mount point first; fixed once opened
	closeOnce sync.Once
}

type tableEntry struct {
	spec MountSpec
	h    MountHandler
}

// OpenMounts opens every spec into one MountTable. It refuses (with an
// error matching ErrInvalidOption) two mounts at the same guest path, and
// two whose host directories are the same or nested: a file reachable
// through two mounts would get the weaker mount's access, so that a
// read-write mount of a directory would silently defeat a read-only mount
// of its subdirectory (monty-fs refuses the same). Nested guest paths of
// disjoint host directories are fine. On error, nothing stays open.
func OpenMounts(specs ...MountSpec) (*MountTable, error) {
	t := &MountTable{}
	type key struct {
		canon string
		fi    os.FileInfo
	}
	var seen []key
	for _, s := range specs {
		if err := s.check(); err != nil {
			t.Close()
			return nil, fmt.Errorf("%w: mount %s: %v", runtime.ErrInvalidOption, s, err)
		}
		canon, err := filepath.Abs(s.Host)
		if err == nil {
			canon, err = filepath.EvalSymlinks(canon)
		}
		var fi os.FileInfo
		if err == nil {
			fi, err = os.Stat(canon)
		}
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("%w: mount %s: host directory: %v", runtime.ErrInvalidOption, s, err)
		}
		for i, prev := range seen {
			other := t.mounts[i].spec
			switch {
			case other.Guest == s.Guest:
				t.Close()
				return nil, fmt.Errorf("%w: mount %s: %s is already the guest path of mount %s; give each mount its own guest path",
					runtime.ErrInvalidOption, s, s.Guest, other)
			case os.SameFile(prev.fi, fi) || nested(prev.canon, canon) || nested(canon, prev.canon):
				t.Close()
				return nil, fmt.Errorf("%w: mount %s: its host directory overlaps the one of mount %s; mounts need disjoint host directories (a file reachable through both would get the weaker mount's access)",
					runtime.ErrInvalidOption, s, other)
			}
		}
		h, err := s.Open()
		if err != nil {
			t.Close()
			return nil, err
		}
		seen = append(seen, key{canon, fi})
		t.mounts = append(t.mounts, tableEntry{s, h})
	}
	// Stable, so that the order of seen (by index) is kept until here.
	slices.SortStableFunc(t.mounts, func(a, b tableEntry) int { return len(b.spec.Guest) - len(a.spec.Guest) })
	return t, nil
}

// nested reports whether dir lies inside parent (both cleaned, absolute).
func nested(parent, dir string) bool {
	rel, err := filepath.Rel(parent, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "."
}

// HandleOS implements OSHandler.
func (t *MountTable) HandleOS(ctx context.Context, call *runtime.OSCall) (object.Value, error) {
	if t == nil {
		return nil, runtime.ErrNotHandled
	}
	for _, m := range t.mounts {
		v, err := m.h.HandleOS(ctx, call)
		if !errors.Is(err, runtime.ErrNotHandled) {
			return v, err
		}
	}
	return nil, runtime.ErrNotHandled
}

// Specs returns the mounts' specs, longest guest path first.
func (t *MountTable) Specs() []MountSpec {
	if t == nil {
		return nil
	}
	out := make([]MountSpec, len(t.mounts))
	for i, m := range t.mounts {
		out[i] = m.spec
	}
	return out
}

// Close closes every mount, returning the first error; later calls do
// nothing. Calls still arriving are answered by closed mounts (an error
// raised in Python).
func (t *MountTable) Close() error {
	if t == nil {
		return nil
	}
	var first error
	t.closeOnce.Do(func() {
		for _, m := range t.mounts {
			if err := m.h.Close(); err != nil && first == nil {
				first = err
			}
		}
	})
	return first
}
