package vfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// ErrNoSpace matches the error of a MemFS change that would pass its
// MemFSLimits. Python code sees it as OSError "[Errno 28] No space left on
// device", as CPython reports a full disk.
var ErrNoSpace = errors.New("monty: no space left in the in-memory filesystem")

// MemFS is an in-memory filesystem mounted at a virtual directory. It is
// safe for concurrent use; its contents live as long as the MemFS value,
// unless a caller saves them (Snapshot) and puts them back (Restore), as
// session files do.
type MemFS struct {
	m    mount
	mu   sync.Mutex
	tree map[string]*memEntry // by cleaned relative path; "." is the root

	limits  MemFSLimits
	used    int64  // bytes counted against limits.MaxBytes
	entries int    // files and directories, the root not counted
	gen     uint64 // changes with every change of the tree
}

type memEntry struct {
	dir     bool
	data    []byte // never changed in place below len: readers may share it
	modTime time.Time
}

// MemFSLimits bound what a MemFS holds; a zero field puts no bound. A
// change that would pass a bound fails with an error matching ErrNoSpace
// and changes nothing.
type MemFSLimits struct {
	// MaxBytes bounds the file contents plus the length of every path
	// (relative to the mount point): a file costs its size and its path,
	// a directory its path, so that neither many empty files nor long
	// names are free.
	MaxBytes int64
	// MaxEntries bounds the number of files and directories (the mount
	// point itself not counted).
	MaxEntries int
}

// MemFile is one file or directory of a MemFS, as Snapshot returns it and
// Restore takes it.
type MemFile struct {
	// Path is relative to the mount point, slash-separated, without "."
	// or ".." elements, e.g. "out/data.csv".
	Path string
	// Dir is true for a directory (Data is then empty).
	Dir bool
	// Data is a file's contents.
	Data []byte
	// ModTime is the time of the last change.
	ModTime time.Time
}

// NewMemFS returns an empty filesystem mounted at mountPoint (an absolute
// virtual path such as "/" or "/tmp"), without limits.
func NewMemFS(mountPoint string) *MemFS {
	f := &MemFS{tree: map[string]*memEntry{".": {dir: true, modTime: time.Now()}}}
	f.m = mount{at: path.Clean("/" + mountPoint), fs: (*memBackend)(f)}
	return f
}

// MountPoint is the virtual directory the filesystem is mounted at.
func (f *MemFS) MountPoint() string { return f.m.at }

// HandleOS implements OSHandler.
func (f *MemFS) HandleOS(ctx context.Context, call *runtime.OSCall) (object.Value, error) {
	return f.m.HandleOS(ctx, call)
}

// SetLimits bounds what the filesystem may hold from now on. Contents
// already past a new bound stay; only changes that would grow them fail.
func (f *MemFS) SetLimits(l MemFSLimits) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits = l
}

// Limits returns the bounds set by SetLimits.
func (f *MemFS) Limits() MemFSLimits {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limits
}

// Usage reports what counts against the limits: bytes (file contents plus
// path lengths, see MemFSLimits.MaxBytes) and entries (files and
// directories).
func (f *MemFS) Usage() (bytes int64, entries int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used, f.entries
}

// Generation changes whenever the contents change (a write, a new
// directory, a removal, a rename, a Restore), so a caller that saved them
// can tell whether saving again is needed.
func (f *MemFS) Generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// WriteFile creates or replaces a file (and its parent directories), for
// seeding the filesystem from Go. name is a virtual path inside the mount.
func (f *MemFS) WriteFile(name string, data []byte) error {
	rel, ok := f.m.rel(name)
	if !ok || rel == "." {
		return fs.ErrInvalid
	}
	if err := f.m.fs.mkdir(path.Dir(rel), true); err != nil && err != fs.ErrExist {
		return err
	}
	return f.m.fs.writeFile(rel, data, false)
}

// ReadFile returns a file's contents, for reading results from Go.
func (f *MemFS) ReadFile(name string) ([]byte, error) {
	rel, ok := f.m.rel(name)
	if !ok {
		return nil, fs.ErrInvalid
	}
	return f.m.fs.readFile(rel)
}

// Remove removes a file or an empty directory. name is a virtual path
// inside the mount.
func (f *MemFS) Remove(name string) error {
	rel, ok := f.m.rel(name)
	if !ok || rel == "." {
		return fs.ErrInvalid
	}
	f.mu.Lock()
	e, ok := f.tree[rel]
	f.mu.Unlock()
	if !ok {
		return fs.ErrNotExist
	}
	return f.m.fs.remove(rel, e.dir)
}

// Snapshot returns every file and directory, sorted by path (parents
// before their children), the mount point itself left out. The Data of
// the files shares the filesystem's memory, which later changes never
// modify: read it, do not modify it.
func (f *MemFS) Snapshot() []MemFile {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]MemFile, 0, len(f.tree)-1)
	for p, e := range f.tree {
		if p == "." {
			continue
		}
		out = append(out, MemFile{Path: p, Dir: e.dir, Data: e.data[:len(e.data):len(e.data)], ModTime: e.modTime})
	}
	slices.SortFunc(out, func(a, b MemFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Restore replaces the whole contents with files, which must be what
// Snapshot returns: valid relative paths (see MemFile.Path) within the
// mount's path limits, sorted, no path twice, every parent directory
// listed before its children. Contents past the limits are refused with an
// error matching ErrNoSpace, anything else with one matching fs.ErrInvalid;
// either way nothing changes. The filesystem keeps the Data slices: do not
// modify them afterwards.
func (f *MemFS) Restore(files []MemFile) error {
	tree := make(map[string]*memEntry, len(files)+1)
	tree["."] = &memEntry{dir: true, modTime: time.Now()}
	var used int64
	prev := ""
	for i, file := range files {
		if err := f.checkRelPath(file.Path); err != nil {
			return err
		}
		if i > 0 && file.Path <= prev {
			return fmt.Errorf("%w: %q is out of order or listed twice", fs.ErrInvalid, file.Path)
		}
		prev = file.Path
		parent, ok := tree[path.Dir(file.Path)]
		switch {
		case !ok:
			return fmt.Errorf("%w: the parent directory of %q is not listed before it", fs.ErrInvalid, file.Path)
		case !parent.dir:
			return fmt.Errorf("%w: %q is inside a file", fs.ErrInvalid, file.Path)
		case file.Dir && len(file.Data) > 0:
			return fmt.Errorf("%w: directory %q has contents", fs.ErrInvalid, file.Path)
		}
		used += int64(len(file.Path)) + int64(len(file.Data))
		tree[file.Path] = &memEntry{dir: file.Dir, data: slices.Clip(file.Data), modTime: file.ModTime}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over(used, len(files)) {
		return &noSpaceError{at: f.m.at, limits: f.limits, bytes: used, entries: len(files)}
	}
	f.tree, f.used, f.entries = tree, used, len(files)
	f.gen++
	return nil
}

// checkRelPath refuses what is not a clean path inside the mount: empty,
// absolute, with ".", ".." or empty elements, NUL bytes, not UTF-8, or past
// the path limits the mount applies to the code's paths.
func (f *MemFS) checkRelPath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("%w: empty path", fs.ErrInvalid)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: path %q is not UTF-8", fs.ErrInvalid, p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: path %q contains a NUL byte", fs.ErrInvalid, p)
	case !fs.ValidPath(p):
		return fmt.Errorf("%w: path %q is not a relative path of names separated by '/' (no '.', '..' or empty names)", fs.ErrInvalid, p)
	case checkPathLength(f.m.virtual(p)) != nil:
		return fmt.Errorf("%w: path %q is longer than %d bytes, has a name longer than %d bytes or is nested deeper than %d", fs.ErrInvalid, p, maxPathBytes, maxNameBytes, maxPathDepth-1)
	}
	return nil
}

// CheckPath reports whether name (relative to the mount point, such as
// "out/data.csv") is a path Restore accepts, with an error matching
// fs.ErrInvalid saying why not.
func (f *MemFS) CheckPath(name string) error { return f.checkRelPath(name) }

// over reports whether usage would pass the limits. Callers hold mu.
func (f *MemFS) over(bytes int64, entries int) bool {
	return (f.limits.MaxBytes > 0 && bytes > f.limits.MaxBytes) || (f.limits.MaxEntries > 0 && entries > f.limits.MaxEntries)
}

// noSpaceError is the ErrNoSpace of one change; its text is the OSError
// Python code sees, with what the limits are.
type noSpaceError struct {
	at      string // mount point
	path    string // virtual path of the change; "" for a Restore
	limits  MemFSLimits
	bytes   int64 // usage the change would have made
	entries int
}

func (e *noSpaceError) Error() string {
	var bounds []string
	if e.limits.MaxBytes > 0 {
		bounds = append(bounds, fmt.Sprintf("%s of contents and paths", runtime.ByteSize(e.limits.MaxBytes)))
	}
	if e.limits.MaxEntries > 0 {
		bounds = append(bounds, fmt.Sprintf("%d files and directories", e.limits.MaxEntries))
	}
	holds := fmt.Sprintf("%s holds at most %s", e.at, strings.Join(bounds, " and "))
	if e.path == "" {
		return fmt.Sprintf("[Errno 28] No space left on device: the files (%s in %d entries) do not fit: %s", runtime.ByteSize(e.bytes), e.entries, holds)
	}
	return fmt.Sprintf("[Errno 28] No space left on device: %s (%s; remove or shorten files to make room)", quote(e.path), holds)
}

func (e *noSpaceError) Unwrap() error { return ErrNoSpace }

// memBackend implements fileSystem over the MemFS tree.
type memBackend MemFS

// grow checks that usage may change by dBytes and dEntries, for a change
// of name; callers hold mu and apply the change when it returns nil.
func (b *memBackend) grow(name string, dBytes int64, dEntries int) error {
	f := (*MemFS)(b)
	if (dBytes > 0 || dEntries > 0) && f.over(b.used+dBytes, b.entries+dEntries) {
		return &noSpaceError{at: b.m.at, path: b.m.virtual(name), limits: b.limits, bytes: b.used + dBytes, entries: b.entries + dEntries}
	}
	b.used += dBytes
	b.entries += dEntries
	b.gen++
	return nil
}

type memInfo struct {
	name string
	e    *memEntry
}

func (i memInfo) Name() string       { return path.Base(i.name) }
func (i memInfo) Size() int64        { return int64(len(i.e.data)) }
func (i memInfo) ModTime() time.Time { return i.e.modTime }
func (i memInfo) IsDir() bool        { return i.e.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.e.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

func (b *memBackend) stat(name string) (fs.FileInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.tree[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return memInfo{name, e}, nil
}

func (b *memBackend) readFile(name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.tree[name]
	switch {
	case !ok:
		return nil, fs.ErrNotExist
	case e.dir:
		return nil, errIsDir
	}
	return slices.Clone(e.data), nil
}

// parentDir checks that name's parent is an existing directory. Callers hold mu.
func (b *memBackend) parentDir(name string) error {
	p, ok := b.tree[path.Dir(name)]
	switch {
	case !ok:
		return fs.ErrNotExist
	case !p.dir:
		return errNotDir
	}
	return nil
}

func (b *memBackend) writeFile(name string, data []byte, appendTo bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.parentDir(name); err != nil {
		return err
	}
	e, ok := b.tree[name]
	if ok && e.dir {
		return errIsDir
	}
	switch {
	case !ok:
		if err := b.grow(name, int64(len(name))+int64(len(data)), 1); err != nil {
			return err
		}
		e = &memEntry{}
		b.tree[name] = e
	case appendTo:
		if err := b.grow(name, int64(len(data)), 0); err != nil {
			return err
		}
	default:
		if err := b.grow(name, int64(len(data))-int64(len(e.data)), 0); err != nil {
			return err
		}
	}
	if appendTo {
		// Appends past len never change what earlier readers share.
		e.data = append(e.data, data...)
	} else {
		e.data = slices.Clone(data)
	}
	e.modTime = time.Now()
	return nil
}

func (b *memBackend) mkdir(name string, parents bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.tree[name]; ok {
		return fs.ErrExist
	}
	if parents {
		var chain []string
		for p := name; p != "."; p = path.Dir(p) {
			chain = append(chain, p)
		}
		var missing []string
		var cost int64
		for _, p := range slices.Backward(chain) {
			e, ok := b.tree[p]
			if ok && !e.dir {
				return errNotDir
			}
			if !ok {
				missing = append(missing, p)
				cost += int64(len(p))
			}
		}
		if err := b.grow(name, cost, len(missing)); err != nil {
			return err
		}
		for _, p := range missing {
			b.tree[p] = &memEntry{dir: true, modTime: time.Now()}
		}
		return nil
	}
	if err := b.parentDir(name); err != nil {
		return err
	}
	if err := b.grow(name, int64(len(name)), 1); err != nil {
		return err
	}
	b.tree[name] = &memEntry{dir: true, modTime: time.Now()}
	return nil
}

func (b *memBackend) children(name string) []string {
	var out []string
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	for k := range b.tree {
		if k != "." && strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/") {
			out = append(out, k[len(prefix):])
		}
	}
	slices.Sort(out)
	return out
}

func (b *memBackend) remove(name string, dir bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.tree[name]
	switch {
	case !ok:
		return fs.ErrNotExist
	case name == ".":
		return fs.ErrPermission
	case dir && !e.dir:
		return errNotDir
	case !dir && e.dir:
		return errIsDir
	case dir && len(b.children(name)) > 0:
		return errNotEmpty
	}
	_ = b.grow(name, -int64(len(name))-int64(len(e.data)), -1)
	delete(b.tree, name)
	return nil
}

func (b *memBackend) rename(from, to string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.tree[from]
	if !ok {
		return fs.ErrNotExist
	}
	if err := b.parentDir(to); err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if e.dir && strings.HasPrefix(to, from+"/") {
		return errInvalid // into itself
	}
	// POSIX rename: a directory may replace an empty directory, a file a
	// file; nothing else replaces an existing entry.
	old, replaces := b.tree[to]
	if replaces {
		switch {
		case old.dir && !e.dir:
			return errIsDir
		case !old.dir && e.dir:
			return errNotDir
		case old.dir && len(b.children(to)) > 0:
			return errNotEmpty
		}
	}
	// Every moved entry's path changes from "from…" to "to…"; a replaced
	// entry is freed.
	var moved []string
	if e.dir {
		for k := range b.tree {
			if strings.HasPrefix(k, from+"/") {
				moved = append(moved, k)
			}
		}
	}
	// A moved entry's new path must be one the sandbox could have made
	// (and a later load accepts): renaming a deep tree under a deep
	// target must not produce paths past the limits.
	for _, k := range moved {
		if err := checkPathLength(b.m.virtual(to + k[len(from):])); err != nil {
			return err
		}
	}
	dBytes := int64(1+len(moved)) * int64(len(to)-len(from))
	dEntries := 0
	if replaces {
		dBytes -= int64(len(to)) + int64(len(old.data))
		dEntries = -1
	}
	if err := b.grow(to, dBytes, dEntries); err != nil {
		return err
	}
	for _, k := range moved {
		v := b.tree[k]
		delete(b.tree, k)
		b.tree[to+k[len(from):]] = v
	}
	delete(b.tree, from)
	b.tree[to] = e
	return nil
}

func (b *memBackend) list(name string) ([]scanEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.tree[name]
	switch {
	case !ok:
		return nil, fs.ErrNotExist
	case !e.dir:
		return nil, errNotDir
	}
	names := b.children(name)
	out := make([]scanEntry, len(names))
	for i, n := range names {
		c := b.tree[path.Join(name, n)]
		out[i] = scanEntry{name: n, isDir: c.dir, isFile: !c.dir}
	}
	return out, nil
}
