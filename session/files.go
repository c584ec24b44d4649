package session

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/store"
)

// FilesMount is where a session's files appear to its code.
const FilesMount = "/work"

// Defaults for zero Files fields.
const (
	// DefaultMaxFileBytes bounds a session's files when Files.MaxBytes is 0.
	DefaultMaxFileBytes = 16 << 20
	// DefaultMaxFileEntries bounds a session's files and directories when
	// Files.MaxEntries is 0.
	DefaultMaxFileEntries = 4096
)

// Errors of the file operations, for use with errors.Is. They also match
// fs.ErrNotExist (a missing file), fs.ErrInvalid (a path that is not a
// clean path inside /work) and vfs.ErrNoSpace (the files would pass
// their limits) where that applies.
var (
	// ErrNoFiles: the session was opened without Options.Files, so it has
	// no /work to change.
	ErrNoFiles = errors.New("session: files are not enabled for this session (Options.Files is nil)")
	// ErrStateTooLarge: the state with the changed files would be larger
	// than Options.MaxStateSize; nothing was stored.
	ErrStateTooLarge = errors.New("session: state too large")
)

// Files turns on a filesystem at /work (FilesMount) that lives with the
// session: what the code writes there is saved in the session's state
// (the same blob, under the same compare-and-set), so a file written by one
// call is there for the next, in another process, and after the state
// moved to another store. A call whose state is not saved (it raised
// without Options.CaptureOnError, or the state is over
// Options.MaxStateSize) leaves the files as they were, and the files count
// toward MaxStateSize. The REPL of a new session starts in /work, so
// relative paths land there. See docs/files.md.
//
// /work is served in front of Options.Host's OS handler (which then sees
// no call for /work); with no Host, /work is the only thing the code can
// reach. The Files value is only read.
type Files struct {
	// MaxBytes bounds the files: their contents plus the length of every
	// path under /work (a file costs its size and its path, a directory
	// its path). 0 means DefaultMaxFileBytes; it is at most the state size
	// cap (Options.MaxStateSize). Code that would pass it gets OSError
	// "[Errno 28] No space left on device".
	MaxBytes int64
	// MaxEntries bounds the number of files and directories (0 means
	// DefaultMaxFileEntries).
	MaxEntries int
}

// fileLimits are the limits of the session's files: Options.Files' (the
// defaults without it, for the file operations that need no /work).
func (o *Options) fileLimits() vfs.MemFSLimits {
	var f Files
	if o.Files != nil {
		f = *o.Files
	}
	l := vfs.MemFSLimits{MaxBytes: f.MaxBytes, MaxEntries: f.MaxEntries}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxFileBytes
	}
	l.MaxBytes = min(l.MaxBytes, o.maxStateSize())
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxFileEntries
	}
	return l
}

// FileInfo describes one file of a session.
type FileInfo struct {
	// Path is relative to /work, e.g. "out/data.csv".
	Path string `json:"path"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Modified is the time of the file's last change.
	Modified time.Time `json:"modified"`
}

// FileUpdate is what a file change stored.
type FileUpdate struct {
	// Created is true when the file did not exist before (WriteFile).
	Created bool
	// State describes the stored state after the change.
	State store.Info
}

// The files section (docs/state-format.md):
//
//	u32 entry count
//	per entry, sorted by path: u8 kind (0 file, 1 directory) | u16 path length
//	| path (relative to /work) | i64 modification time (unix nanoseconds)
//	| files only: u8 encoding (0 raw, 1 zstd) | u32 stored length | contents as stored
//
// Each file is compressed on its own, so that saving a state keeps the
// stored form of every file the call did not change (fileCache) and
// compresses only those it wrote.
const (
	kindFile = 0
	kindDir  = 1
	encRaw   = 0
	encZstd  = 1
	// minEntry is the size of the smallest entry (a directory with a
	// one-byte name), which bounds the count a section can hold.
	minEntry = 1 + 2 + 1 + 8
	// entryOverhead is the most an entry adds besides its path and
	// contents.
	entryOverhead = 1 + 2 + 8 + 1 + 4
	// compressFileMin is the smallest file worth compressing.
	compressFileMin = 256
	// compressProbe is how much of a large file is compressed first to
	// tell whether it compresses at all (random or already compressed
	// data is then stored raw without compressing the rest).
	compressProbe = 64 << 10
)

// storedFile is a file's contents as a files section stores them.
type storedFile struct {
	enc    byte
	stored []byte
}

// dataKey identifies file contents by their memory: a MemFS never changes
// the bytes its data slices view, so the same array and length are the
// same contents.
type dataKey struct {
	p *byte
	n int
}

// fileCache maps file contents to their stored form, for the files of
// the section last written or read.
type fileCache map[dataKey]storedFile

func keyOf(b []byte) dataKey { return dataKey{&b[0], len(b)} }

// storeFile is the stored form of data: zstd when asked, when the file is
// large enough and when that makes it smaller; else raw.
func storeFile(data []byte, compress bool) storedFile {
	if !compress || len(data) < compressFileMin {
		return storedFile{encRaw, data}
	}
	if len(data) > 2*compressProbe {
		if probe := compressDump(data[:compressProbe]); len(probe) > compressProbe*9/10 {
			return storedFile{encRaw, data}
		}
	}
	if z := compressDump(data); len(z) < len(data) {
		return storedFile{encZstd, z}
	}
	return storedFile{encRaw, data}
}

// encodeFiles writes the files section of files (a MemFS snapshot), nil
// when there are no files. Files found in cache keep their stored form;
// the others are compressed when asked (and when that makes them
// smaller). It returns the cache of the new section.
func encodeFiles(files []vfs.MemFile, compress bool, cache fileCache) ([]byte, fileCache) {
	if len(files) == 0 {
		return nil, nil
	}
	next := make(fileCache, len(files))
	forms := make([]storedFile, len(files))
	size := 4
	for i, f := range files {
		size += entryOverhead + len(f.Path)
		if f.Dir || len(f.Data) == 0 {
			continue
		}
		k := keyOf(f.Data)
		form, ok := cache[k]
		if !ok || !compress && form.enc != encRaw {
			form = storeFile(f.Data, compress)
		}
		forms[i], next[k] = form, form
		size += len(form.stored)
	}
	out := make([]byte, 0, size)
	out = binary.BigEndian.AppendUint32(out, uint32(len(files)))
	for i, f := range files {
		kind := byte(kindFile)
		if f.Dir {
			kind = kindDir
		}
		out = append(out, kind)
		out = binary.BigEndian.AppendUint16(out, uint16(len(f.Path)))
		out = append(out, f.Path...)
		out = binary.BigEndian.AppendUint64(out, uint64(f.ModTime.UnixNano()))
		if !f.Dir {
			out = append(out, forms[i].enc)
			out = binary.BigEndian.AppendUint32(out, uint32(len(forms[i].stored)))
			out = append(out, forms[i].stored...)
		}
	}
	return out, next
}

// decodeFiles parses a files section, decompressing its files at most up
// to what limits l allow, and returns them with the section's cache. A
// section that does not parse is corrupt (ErrCorrupt); files past the
// limits are refused with an error matching vfs.ErrNoSpace before
// more than the limits' worth is decompressed. The paths are checked by
// MemFS.Restore.
func decodeFiles(section []byte, l vfs.MemFSLimits) ([]vfs.MemFile, fileCache, error) {
	if len(section) == 0 {
		return nil, nil, nil
	}
	if len(section) < 4 {
		return nil, nil, corrupt("files section: truncated")
	}
	n := binary.BigEndian.Uint32(section)
	r := section[4:]
	if uint64(n)*minEntry > uint64(len(r)) {
		return nil, nil, corrupt("files section: %d entries cannot fit in %d bytes", n, len(r))
	}
	if int64(n) > int64(l.MaxEntries) {
		return nil, nil, filesTooLarge(fmt.Sprintf("%d entries", n), l)
	}
	files := make([]vfs.MemFile, n)
	cache := make(fileCache, n)
	var used int64
	for i := range files {
		if len(r) < 3 {
			return nil, nil, corrupt("files section: entry %d truncated", i)
		}
		kind, plen := r[0], int(binary.BigEndian.Uint16(r[1:3]))
		r = r[3:]
		if kind != kindFile && kind != kindDir {
			return nil, nil, corrupt("files section: entry %d has unknown kind %d", i, kind)
		}
		if len(r) < plen+8 {
			return nil, nil, corrupt("files section: entry %d truncated", i)
		}
		f := &files[i]
		f.Path, f.Dir = string(r[:plen]), kind == kindDir
		f.ModTime = time.Unix(0, int64(binary.BigEndian.Uint64(r[plen:plen+8])))
		r = r[plen+8:]
		used += int64(plen)
		if f.Dir {
			continue
		}
		if len(r) < 5 {
			return nil, nil, corrupt("files section: entry %d truncated", i)
		}
		enc, size := r[0], binary.BigEndian.Uint32(r[1:5])
		r = r[5:]
		if uint64(size) > uint64(len(r)) {
			return nil, nil, corrupt("files section: %q declares %d bytes, %d are left", f.Path, size, len(r))
		}
		stored := r[:size:size]
		r = r[size:]
		switch {
		case size == 0 && enc == encRaw:
		case enc == encRaw:
			f.Data = stored
		case enc == encZstd:
			left := l.MaxBytes - used
			if left <= 0 {
				return nil, nil, filesTooLarge("more than the limit", l)
			}
			data, err := decompressDump(stored, left)
			var over *runtime.StateLimitError
			switch {
			case errors.As(err, &over):
				return nil, nil, filesTooLarge(fmt.Sprintf("%q expands to more than the %d bytes left", f.Path, left), l)
			case err != nil:
				return nil, nil, corrupt("files section: %q does not decompress: %v", f.Path, err)
			}
			f.Data = data[:len(data):len(data)]
		default:
			return nil, nil, corrupt("files section: %q has unknown encoding %d", f.Path, enc)
		}
		used += int64(len(f.Data))
		if used > l.MaxBytes {
			return nil, nil, filesTooLarge(fmt.Sprintf("more than %d bytes", l.MaxBytes), l)
		}
		if len(f.Data) > 0 {
			cache[keyOf(f.Data)] = storedFile{enc, stored}
		}
	}
	if len(r) != 0 {
		return nil, nil, corrupt("files section: %d trailing bytes", len(r))
	}
	return files, cache, nil
}

// filesTooLarge is the error for stored files past the limits of the
// session opening them: the state is fine, this session's limits are
// smaller than those it was written with.
func filesTooLarge(what string, l vfs.MemFSLimits) error {
	return fmt.Errorf("%w: the stored files do not fit this session's file limits (%d bytes, %d entries; Options.Files): %s; the state is kept unchanged, open it with larger limits",
		vfs.ErrNoSpace, l.MaxBytes, l.MaxEntries, what)
}

// restoreInto puts the files of blob b into mem, or refuses them: a
// malformed section or tree is ErrCorrupt, files past mem's limits match
// vfs.ErrNoSpace. It returns the section's cache.
func restoreInto(mem *vfs.MemFS, b *blob) (fileCache, error) {
	var files []vfs.MemFile
	var cache fileCache
	if b != nil {
		var err error
		if files, cache, err = decodeFiles(b.Files, mem.Limits()); err != nil {
			return nil, err
		}
	}
	err := mem.Restore(files)
	switch {
	case errors.Is(err, vfs.ErrNoSpace):
		return nil, filesTooLarge(err.Error(), mem.Limits())
	case err != nil:
		return nil, corrupt("files section: %v", err)
	}
	return cache, nil
}

// newFilesMem is an empty /work with limits l.
func newFilesMem(l vfs.MemFSLimits) *vfs.MemFS {
	m := vfs.NewMemFS(FilesMount)
	m.SetLimits(l)
	return m
}

// pathChecker checks paths given to the file operations.
var pathChecker = vfs.NewMemFS(FilesMount)

// filePath turns a path given to a file operation ("out/data.csv" or
// "/work/out/data.csv") into the path under /work, or explains why it is
// not one.
func filePath(name string) (string, error) {
	rel := name
	if strings.HasPrefix(name, "/") {
		var ok bool
		if rel, ok = strings.CutPrefix(name, FilesMount+"/"); !ok {
			return "", fmt.Errorf("%w: %q is not under %s: give a path relative to %s, such as \"out/data.csv\"", fs.ErrInvalid, name, FilesMount, FilesMount)
		}
	}
	if err := pathChecker.CheckPath(rel); err != nil {
		return "", fmt.Errorf("session file %q: %w", name, err)
	}
	return rel, nil
}

// listFiles describes the files (not the directories) of mem.
func listFiles(mem *vfs.MemFS) []FileInfo {
	out := []FileInfo{}
	for _, f := range mem.Snapshot() {
		if !f.Dir {
			out = append(out, FileInfo{Path: f.Path, Size: int64(len(f.Data)), Modified: f.ModTime})
		}
	}
	return out
}

// readFrom reads file rel of session id from mem.
func readFrom(mem *vfs.MemFS, id, rel string) ([]byte, error) {
	data, err := mem.ReadFile(FilesMount + "/" + rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("session %s has no file %q: %w", id, rel, fs.ErrNotExist)
	case err != nil:
		// A directory: not a file either.
		return nil, fmt.Errorf("session %s has no file %q (it is a directory): %w", id, rel, fs.ErrNotExist)
	}
	return data, nil
}

// writeTo creates or replaces file rel in mem (and its parent
// directories), reporting whether it is new.
func writeTo(mem *vfs.MemFS, id, rel string, data []byte) (created bool, err error) {
	_, err = mem.ReadFile(FilesMount + "/" + rel)
	created = errors.Is(err, fs.ErrNotExist)
	err = mem.WriteFile(FilesMount+"/"+rel, data)
	switch {
	case err == nil:
		return created, nil
	case errors.Is(err, vfs.ErrNoSpace):
		return false, fmt.Errorf("session %s: writing %q: %w", id, rel, err)
	}
	return false, fmt.Errorf("%w: session %s: cannot write %q: %v (a directory is in its place, or a file in the place of one of its directories)", fs.ErrInvalid, id, rel, err)
}

// removeFrom removes file rel from mem.
func removeFrom(mem *vfs.MemFS, id, rel string) error {
	if _, err := readFrom(mem, id, rel); err != nil {
		return err
	}
	return mem.Remove(FilesMount + "/" + rel)
}

// withFiles is a copy of b whose files section holds mem's files (cache:
// the stored forms of b's files); it returns the new section's cache.
func withFiles(b *blob, mem *vfs.MemFS, cache fileCache, compress bool) (*blob, fileCache) {
	nb := *b
	var next fileCache
	nb.Files, next = encodeFiles(mem.Snapshot(), compress, cache)
	return &nb, next
}

// The file operations below work on the stored state directly, without an
// interpreter: what the HTTP API and the command line use. They read
// Options.Store, SigningKey and VerifyKeys (a blob must verify), the file
// limits of Options.Files (the defaults when it is nil), MaxStateSize,
// NoCompression and, for a new session, Engine (nil: the Monty version is
// left empty). A blob that does not verify or parse matches ErrCorrupt and
// is never changed; a missing session matches store.ErrNotFound.

// ListFiles lists the files (not the directories) of the session stored
// under id, sorted by path.
func ListFiles(ctx context.Context, id string, opts Options) ([]FileInfo, error) {
	mem, _, err := storedFiles(ctx, id, &opts)
	if err != nil {
		return nil, err
	}
	return listFiles(mem), nil
}

// ReadFile returns the contents of file name ("out.csv" or
// "/work/out.csv") of the session stored under id; an error matching
// fs.ErrNotExist when there is no such file.
func ReadFile(ctx context.Context, id, name string, opts Options) ([]byte, error) {
	rel, err := filePath(name)
	if err != nil {
		return nil, err
	}
	mem, _, err := storedFiles(ctx, id, &opts)
	if err != nil {
		return nil, err
	}
	return readFrom(mem, id, rel)
}

// WriteFile creates or replaces file name of the session stored under id
// (creating the session when there is none: its first state is then this
// file), with its parent directories, under compare-and-set: when another
// writer (a running call, another upload) stores the session in between,
// it fails with an error matching store.ErrConflict and stores nothing.
// Errors match vfs.ErrNoSpace when the files would pass their limits,
// ErrStateTooLarge when the state would pass MaxStateSize, fs.ErrInvalid
// for a bad path.
func WriteFile(ctx context.Context, id, name string, data []byte, opts Options) (*FileUpdate, error) {
	rel, err := filePath(name)
	if err != nil {
		return nil, err
	}
	return changeStored(ctx, id, &opts, true, func(mem *vfs.MemFS) (bool, error) { return writeTo(mem, id, rel, data) })
}

// RemoveFile removes file name of the session stored under id, under
// compare-and-set as WriteFile; an error matching fs.ErrNotExist when there
// is no such file.
func RemoveFile(ctx context.Context, id, name string, opts Options) (*FileUpdate, error) {
	rel, err := filePath(name)
	if err != nil {
		return nil, err
	}
	return changeStored(ctx, id, &opts, false, func(mem *vfs.MemFS) (bool, error) { return false, removeFrom(mem, id, rel) })
}

// stored is a verified state blob as stored, its dump left compressed.
type stored struct {
	b       *blob
	version string    // the store's version, for compare-and-set
	cache   fileCache // the stored forms of b's files
}

// storedFiles reads the state stored under id and its files.
func storedFiles(ctx context.Context, id string, opts *Options) (*vfs.MemFS, *stored, error) {
	if opts.Store == nil {
		return nil, nil, errors.New("session: Options.Store is required")
	}
	if err := store.CheckID(id); err != nil {
		return nil, nil, err
	}
	obj, err := opts.Store.Get(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, fmt.Errorf("session %s: no state is stored under this id: %w", id, err)
		}
		return nil, nil, err
	}
	b, err := parseBlobKeys(obj.Data, opts.readKeys())
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	mem := newFilesMem(opts.fileLimits())
	cache, err := restoreInto(mem, b)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	return mem, &stored{b: b, version: obj.Info.Version, cache: cache}, nil
}

// changeStored applies change to the files of the session stored under id
// (an empty one when create and there is none) and stores the result
// under compare-and-set.
func changeStored(ctx context.Context, id string, opts *Options, create bool, change func(mem *vfs.MemFS) (bool, error)) (*FileUpdate, error) {
	mem, st, err := storedFiles(ctx, id, opts)
	var cond store.Cond
	switch {
	case err == nil:
		cond.IfVersion = st.version
	case create && errors.Is(err, store.ErrNotFound):
		mem, st, cond.IfAbsent = newFilesMem(opts.fileLimits()), &stored{}, true
	default:
		return nil, err
	}
	created, err := change(mem)
	if err != nil {
		return nil, err
	}
	base := st.b
	if base == nil {
		version := ""
		if opts.Engine != nil {
			version = opts.Engine.MontyVersion()
		}
		base = blank(version, moduleSum(opts.Engine))
	}
	b, _ := withFiles(base, mem, st.cache, !opts.NoCompression)
	data, err := b.encode(opts.SigningKey, !opts.NoCompression)
	if err != nil {
		return nil, err
	}
	if max := opts.maxStateSize(); int64(len(data)) > max {
		return nil, fmt.Errorf("session %s: %w: with this change the state is %d bytes, over the %d-byte limit (Options.MaxStateSize); nothing was stored", id, ErrStateTooLarge, len(data), max)
	}
	info, err := opts.Store.Put(ctx, id, data, cond)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("session %s: %w: the session was updated while its files were being changed; nothing was stored, try again", id, err)
		}
		return nil, err
	}
	return &FileUpdate{Created: created, State: info}, nil
}
