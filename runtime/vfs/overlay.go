package vfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// OverlayFS mounts a host directory copy-on-write: the code reads the host
// directory's files, and everything it changes — writes, appends, new
// directories, deletions, renames — lands in an in-memory layer above it.
// The code sees its own changes; the host directory never changes. It is
// monty-fs's overlay mode, with its semantics and errors:
//
//   - Reads are confined with os.Root, as DirFS's are, and never follow a
//     symbolic link: a path through one raises PermissionError, a listing
//     shows one as a link that is neither file nor directory, and
//     Path.is_symlink answers True for it.
//   - A deleted host entry is hidden by a whiteout; a directory the code
//     creates, or renames, hides whatever the host has below it.
//   - Renaming a host file or directory moves references, not contents: a
//     host file is read (and charged to memory) only when the code appends
//     to it.
//   - Memory: what the layer holds (contents, plus 256 bytes and the path
//     for every entry, whiteouts included) and the file read in progress
//     must fit OverlayOptions.MemoryLimit; past it the code gets
//     MemoryError("mount memory usage limit of … exceeded"). Deleting or
//     truncating what the code wrote gives the memory back.
//   - Writes: OverlayOptions.WriteLimit caps the bytes written over the
//     OverlayFS's life, as DirFS's does; appending to a host file also
//     counts the host file's size, which the append copies into memory.
//
// The layer lives as long as the OverlayFS: one shared by several runs or
// sessions lets each see what the others wrote. It is safe for concurrent
// use (one operation at a time); Close it when done.
type OverlayFS struct {
	m     mount
	root  *os.Root
	quota *writeQuota
	limit int64 // memory budget

	mu    sync.Mutex
	upper map[string]*ovEntry            // by relative path ("a/b"); never "."
	kids  map[string]map[string]struct{} // parent path → names in upper
	used  int64                          // memory retained by upper
}

// OverlayOptions configures OpenOverlayFS. It is a plain value.
type OverlayOptions struct {
	// WriteLimit caps the bytes the code may write over the OverlayFS's
	// life (0: no limit). A write that would pass it raises
	// OSError("disk write limit of … exceeded") and changes nothing.
	WriteLimit int64
	// MemoryLimit is the memory budget of the in-memory layer together
	// with the file read in progress (0: DefaultMountMemoryLimit).
	MemoryLimit int64
}

// ovEntryOverhead is what every entry of the layer is charged besides its
// path and contents (monty-fs's ENTRY_MEMORY_USAGE).
const ovEntryOverhead = 256

type ovKind uint8

const (
	ovFile    ovKind = iota // contents in memory
	ovRef                   // a host file renamed into place, read lazily
	ovDir                   // a directory of the layer; hides the host below it
	ovDeleted               // a whiteout
)

type ovEntry struct {
	kind  ovKind
	data  []byte // ovFile
	ref   string // ovRef: the host file, relative to the root
	size  int64  // ovRef: its size when renamed
	mtime time.Time
}

func (e *ovEntry) cost(name string) int64 {
	return ovEntryOverhead + int64(len(name)+len(e.data)+len(e.ref))
}

// OpenOverlayFS mounts hostDir copy-on-write at mountPoint, an absolute
// virtual path such as "/data". The directory is opened once, here. Invalid
// options and a host directory that cannot be opened return errors
// matching ErrInvalidOption (and the underlying error).
func OpenOverlayFS(hostDir, mountPoint string, opts OverlayOptions) (*OverlayFS, error) {
	at, root, err := openMount(hostDir, mountPoint, opts.WriteLimit, opts.MemoryLimit)
	if err != nil {
		return nil, err
	}
	o := &OverlayFS{
		root:  root,
		quota: newWriteQuota(opts.WriteLimit),
		limit: memoryLimit(opts.MemoryLimit),
		upper: map[string]*ovEntry{},
		kids:  map[string]map[string]struct{}{},
	}
	o.m = mount{at: at, fs: (*ovBackend)(o)}
	return o, nil
}

// HandleOS implements OSHandler.
func (o *OverlayFS) HandleOS(ctx context.Context, call *runtime.OSCall) (object.Value, error) {
	return o.m.HandleOS(ctx, call)
}

// MountPoint returns the virtual directory the host directory appears at.
func (o *OverlayFS) MountPoint() string { return o.m.at }

// ReadFile returns a file's contents as the code sees them (its own writes
// included), for reading results from Go. name is a virtual path inside
// the mount.
func (o *OverlayFS) ReadFile(name string) ([]byte, error) {
	rel, ok := o.m.rel(name)
	if !ok {
		return nil, fs.ErrInvalid
	}
	return (*ovBackend)(o).readFile(rel)
}

// WriteBytesUsed returns the bytes written through the mount so far, as its
// write limit counts them (0 when it has no limit).
func (o *OverlayFS) WriteBytesUsed() int64 { return o.quota.spent() }

// MemoryUsed returns the memory the in-memory layer holds, as its budget
// counts it.
func (o *OverlayFS) MemoryUsed() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.used
}

// Close releases the host directory. The in-memory layer is dropped with
// the OverlayFS.
func (o *OverlayFS) Close() error { return o.root.Close() }

// ovBackend implements fileSystem for an OverlayFS. Its exported-to-mount
// methods lock mu; the helpers expect it held.
type ovBackend OverlayFS

// --- the layer ---

// set stores e at name without checking the budget.
func (o *ovBackend) set(name string, e *ovEntry) {
	if old := o.upper[name]; old != nil {
		o.used -= old.cost(name)
	} else {
		o.link(name)
	}
	o.upper[name] = e
	o.used += e.cost(name)
}

// put stores e at name if the layer stays within its budget.
func (o *ovBackend) put(name string, e *ovEntry) error {
	projected := o.used + e.cost(name)
	if old := o.upper[name]; old != nil {
		projected -= old.cost(name)
	}
	if projected > o.limit {
		return memoryLimitError(o.limit)
	}
	o.set(name, e)
	return nil
}

// drop removes name's entry (not what lies below it).
func (o *ovBackend) drop(name string) {
	old := o.upper[name]
	if old == nil {
		return
	}
	o.used -= old.cost(name)
	delete(o.upper, name)
	o.unlink(name)
}

// kids indexes the layer as a tree: every ancestor of an entry lists the
// next name down, whether or not it has an entry itself (a host directory
// with entries below it has none). link adds name's chain.
func (o *ovBackend) link(name string) {
	for name != "." {
		dir, base := path.Dir(name), path.Base(name)
		m := o.kids[dir]
		if m == nil {
			m = map[string]struct{}{}
			o.kids[dir] = m
		}
		if _, ok := m[base]; ok {
			return
		}
		m[base] = struct{}{}
		name = dir
	}
}

// unlink prunes name's chain up to the first ancestor still in use.
func (o *ovBackend) unlink(name string) {
	for name != "." && o.upper[name] == nil && len(o.kids[name]) == 0 {
		dir := path.Dir(name)
		delete(o.kids, name)
		delete(o.kids[dir], path.Base(name))
		name = dir
	}
}

// below calls fn for every entry strictly below name, parents first.
func (o *ovBackend) below(name string, fn func(key string, e *ovEntry)) {
	names := make([]string, 0, len(o.kids[name]))
	for c := range o.kids[name] {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, c := range names {
		key := join(name, c)
		if e := o.upper[key]; e != nil {
			fn(key, e)
		}
		o.below(key, fn)
	}
}

// dropBelow removes every entry strictly below name.
func (o *ovBackend) dropBelow(name string) {
	var keys []string
	o.below(name, func(key string, _ *ovEntry) { keys = append(keys, key) })
	for _, k := range slices.Backward(keys) {
		o.drop(k)
	}
}

// liveKids reports whether name has entries of the layer right below it
// that are not whiteouts.
func (o *ovBackend) liveKids(name string) bool {
	for c := range o.kids[name] {
		if e := o.upper[join(name, c)]; e != nil && e.kind != ovDeleted {
			return true
		}
	}
	return false
}

// join is path.Join for a relative directory that may be ".".
func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// look returns name's entry in the layer; without one, host says whether
// the host answers for name (false when an ancestor's entry hides it: the
// layer's directories are opaque, its files and whiteouts have nothing
// below them).
func (o *ovBackend) look(name string) (e *ovEntry, host bool) {
	if e := o.upper[name]; e != nil {
		return e, false
	}
	return nil, !o.shadowed(name)
}

// shadowed reports whether an entry of the layer above name hides the host
// there.
func (o *ovBackend) shadowed(name string) bool {
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if o.upper[p] != nil {
			return true
		}
	}
	return false
}

// hostHas reports whether the host has something at name that the layer
// would show but for name's own entry: what a deletion must white out.
func (o *ovBackend) hostHas(name string) bool {
	if o.shadowed(name) {
		return false
	}
	_, err := o.root.Lstat(name)
	return err == nil
}

// hide makes name disappear, with what lies below it: a whiteout where the
// host has something there, no entry otherwise.
func (o *ovBackend) hide(name string) error {
	if o.hostHas(name) {
		if err := o.put(name, &ovEntry{kind: ovDeleted, mtime: time.Now()}); err != nil {
			return err
		}
	} else {
		o.drop(name)
	}
	o.dropBelow(name)
	return nil
}

// --- the host ---

type realKind uint8

const (
	realAbsent realKind = iota
	realDir
	realFile // anything but a directory or symlink
	realSymlink
)

// walk classifies one component at a time, descending a directory handle
// as it goes, so that a path costs one lookup per component.
type walk struct {
	root *os.Root
	cur  *os.Root // nil: still at root
	done bool
}

func (w *walk) here() *os.Root {
	if w.cur != nil {
		return w.cur
	}
	return w.root
}

func (w *walk) close() {
	if w.cur != nil {
		w.cur.Close()
	}
}

// step classifies component where the walk stands and descends into it if
// it is a directory. Nothing is below a missing component, a file or a
// link, so the walk ends there.
func (w *walk) step(component string) (realKind, error) {
	if w.done {
		return realAbsent, nil
	}
	k, err := classify(w.here(), component)
	if err != nil || k != realDir {
		w.done = true
		return k, err
	}
	next, err := w.here().OpenRoot(component)
	if err != nil {
		w.done = true
		if errors.Is(err, fs.ErrNotExist) {
			return realAbsent, nil // gone meanwhile
		}
		return 0, hostErr(err)
	}
	w.close()
	w.cur = next
	return realDir, nil
}

// classify says what is at name without following a final symlink.
func classify(root *os.Root, name string) (realKind, error) {
	fi, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return realAbsent, nil
	case err != nil:
		return 0, hostErr(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return realSymlink, nil
	case fi.IsDir():
		return realDir, nil
	}
	return realFile, nil
}

// realPath refuses a host path with a symlink in any component: the layer
// knows entries by name, and a link would be a second name for a file it
// may have replaced or deleted. (This keeps the view coherent; os.Root is
// what confines.)
func (o *ovBackend) realPath(name string) error {
	_, err := o.hostWalk(name)
	return err
}

// hostWalk walks name's components on the host, refusing a symlink among
// them (PermissionError): realDir when every one is a directory, else the
// kind of the first that is not (nothing is below it).
func (o *ovBackend) hostWalk(name string) (realKind, error) {
	if name == "." {
		return realDir, nil
	}
	w := &walk{root: o.root}
	defer w.close()
	for _, c := range strings.Split(name, "/") {
		k, err := w.step(c)
		switch {
		case err != nil:
			return 0, err
		case k == realSymlink:
			return 0, fs.ErrPermission
		case k != realDir:
			return k, nil
		}
	}
	return realDir, nil
}

// hostKind says what the host directory has at name, reached without
// symlinks (realPath); a symlink at name itself is refused too, as
// PermissionError.
func (o *ovBackend) hostKind(name string) (realKind, error) {
	if err := o.realPath(name); err != nil {
		return 0, err
	}
	k, err := classify(o.root, name)
	if err == nil && k == realSymlink {
		return 0, fs.ErrPermission
	}
	return k, err
}

// --- fileSystem ---

type ovInfo struct {
	name string
	e    *ovEntry
}

func (i ovInfo) Name() string       { return path.Base(i.name) }
func (i ovInfo) ModTime() time.Time { return i.e.mtime }
func (i ovInfo) IsDir() bool        { return i.e.kind == ovDir }
func (i ovInfo) Sys() any           { return nil }
func (i ovInfo) Size() int64 {
	if i.e.kind == ovRef {
		return i.e.size
	}
	return int64(len(i.e.data))
}
func (i ovInfo) Mode() fs.FileMode {
	if i.e.kind == ovDir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

func (o *ovBackend) stat(name string) (fs.FileInfo, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, host := o.look(name)
	switch {
	case e != nil && e.kind == ovDeleted, e == nil && !host:
		return nil, fs.ErrNotExist
	case e != nil && e.kind == ovRef:
		if err := o.realPath(e.ref); err != nil {
			return nil, err
		}
		fallthrough
	case e != nil:
		return ovInfo{name, e}, nil
	}
	if err := o.realPath(name); err != nil {
		return nil, err
	}
	fi, err := o.root.Stat(name)
	return fi, hostErr(err)
}

func (o *ovBackend) isSymlink(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, host := o.look(name); e != nil || !host {
		return false
	}
	if o.realPath(path.Dir(name)) != nil {
		return false
	}
	k, err := classify(o.root, name)
	return err == nil && k == realSymlink
}

func (o *ovBackend) readFile(name string) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	avail := o.limit - o.used
	e, host := o.look(name)
	switch {
	case e == nil && !host, e != nil && e.kind == ovDeleted:
		return nil, fs.ErrNotExist
	case e != nil && e.kind == ovDir:
		return nil, errIsDir
	case e != nil && e.kind == ovFile:
		if int64(len(e.data)) > avail {
			return nil, memoryLimitError(o.limit)
		}
		return slices.Clone(e.data), nil
	case e != nil: // ovRef
		name = e.ref
	}
	if err := o.realPath(name); err != nil {
		return nil, err
	}
	return readRegular(o.root, name, avail, o.limit)
}

// parentDir checks that name's parent is a directory the layer may write
// below: one of its own, or a host directory reached without a symlink.
func (o *ovBackend) parentDir(name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	e, host := o.look(dir)
	switch {
	case e != nil && e.kind == ovDir:
		return nil
	case e != nil, !host:
		return fs.ErrNotExist
	}
	k, err := o.hostWalk(dir)
	if err == nil && k != realDir {
		err = fs.ErrNotExist
	}
	return err
}

// writable checks that name may become a file: not a directory, not a
// symlink on the host.
func (o *ovBackend) writable(name string) error {
	e, host := o.look(name)
	switch {
	case e != nil && e.kind == ovDir:
		return errIsDir
	case e != nil, !host:
		return nil
	}
	k, err := o.hostKind(name)
	switch {
	case err != nil:
		return err
	case k == realDir:
		return errIsDir
	}
	return nil
}

func (o *ovBackend) writeFile(name string, data []byte, appendTo bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case appendTo && len(data) == 0:
		// open(…, 'a'): the file must exist, but a host file is not copied
		// until something is appended.
		return o.touch(name)
	case appendTo:
		return o.appendTo(name, data)
	}
	n := int64(len(data))
	if err := o.quota.reserve(n); err != nil {
		return err
	}
	err := o.parentDir(name)
	if err == nil {
		err = o.writable(name)
	}
	if err == nil {
		err = o.put(name, &ovEntry{kind: ovFile, data: slices.Clone(data), mtime: time.Now()})
	}
	if err != nil {
		o.quota.refund(n)
	}
	return err
}

// touch makes sure name exists as a file.
func (o *ovBackend) touch(name string) error {
	e, host := o.look(name)
	switch {
	case e != nil && (e.kind == ovFile || e.kind == ovRef):
		return nil
	case e != nil && e.kind == ovDir:
		return errIsDir
	case e == nil && host:
		k, err := o.hostKind(name)
		switch {
		case err != nil:
			return err
		case k == realDir:
			return errIsDir
		case k == realFile:
			return o.parentDir(name)
		}
	}
	if err := o.parentDir(name); err != nil {
		return err
	}
	return o.put(name, &ovEntry{kind: ovFile, mtime: time.Now()})
}

// appendTo appends data to name. A file not yet in memory (a host file, or
// one renamed from the host) is copied up first: its size counts against
// the write limit too, since that is what the append puts in memory.
func (o *ovBackend) appendTo(name string, data []byte) error {
	if err := o.parentDir(name); err != nil {
		return err
	}
	if err := o.writable(name); err != nil {
		return err
	}
	n := int64(len(data))
	e, host := o.look(name)
	if e != nil && e.kind == ovFile {
		if err := o.quota.reserve(n); err != nil {
			return err
		}
		if n > o.limit-o.used {
			o.quota.refund(n)
			return memoryLimitError(o.limit)
		}
		e.data = append(e.data, data...)
		e.mtime = time.Now()
		o.used += n
		return nil
	}
	src := "" // the host file to copy up
	switch {
	case e != nil && e.kind == ovRef:
		if err := o.realPath(e.ref); err != nil {
			return err
		}
		src = e.ref
	case e == nil && host:
		src = name // writable checked the path
	}
	var existing int64
	if src != "" {
		fi, err := o.root.Stat(src)
		switch {
		case err == nil:
			existing = fi.Size()
		case errors.Is(err, fs.ErrNotExist) && e == nil:
			src = ""
		default:
			return hostErr(err)
		}
	}
	charge := existing + n
	if err := o.quota.reserve(charge); err != nil {
		return err
	}
	avail := o.limit - o.used
	if e != nil {
		avail += e.cost(name)
	}
	if ovEntryOverhead+int64(len(name))+charge > avail {
		o.quota.refund(charge)
		return memoryLimitError(o.limit)
	}
	var content []byte
	if src != "" {
		var err error
		content, err = readRegular(o.root, src, o.limit-o.used-n, o.limit)
		if err != nil {
			o.quota.refund(charge)
			return err
		}
	}
	err := o.put(name, &ovEntry{kind: ovFile, data: append(content, data...), mtime: time.Now()})
	if err != nil {
		o.quota.refund(charge)
	}
	return err
}

func (o *ovBackend) mkdir(name string, parents bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, host := o.look(name)
	switch {
	case e != nil && e.kind != ovDeleted:
		return fs.ErrExist
	case e == nil && host:
		k, err := o.hostKind(name)
		switch {
		case err != nil:
			return err
		case k != realAbsent:
			return fs.ErrExist
		}
	}
	var err error
	if parents {
		err = o.mkdirParents(name)
	} else {
		err = o.parentDir(name)
	}
	if err != nil {
		return err
	}
	return o.put(name, &ovEntry{kind: ovDir, mtime: time.Now()})
}

// mkdirParents creates the missing directories above name.
func (o *ovBackend) mkdirParents(name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		named := func(err error) error { return &namedError{err: err, path: o.m.virtual(p)} }
		e, host := o.look(p)
		switch {
		case e != nil && e.kind == ovDir:
			continue
		case e != nil && e.kind != ovDeleted:
			return named(errNotDir)
		case e == nil && host:
			k, err := classify(o.root, p)
			switch {
			case err != nil:
				return named(err)
			case k == realDir:
				continue
			case k == realSymlink:
				return named(fs.ErrPermission)
			case k == realFile:
				return named(errNotDir)
			}
		}
		if err := o.put(p, &ovEntry{kind: ovDir, mtime: time.Now()}); err != nil {
			return err
		}
	}
	return nil
}

func (o *ovBackend) remove(name string, dir bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if dir && name == "." {
		return fs.ErrPermission // the mount's root has no name inside the mount
	}
	e, host := o.look(name)
	switch {
	case e == nil && !host, e != nil && e.kind == ovDeleted:
		return fs.ErrNotExist
	case e != nil && e.kind == ovDir && !dir:
		return errIsDir
	case e != nil && e.kind != ovDir && dir:
		return errNotDir
	case e != nil && dir && o.liveKids(name):
		return errNotEmpty
	case e != nil:
		return o.hide(name)
	}
	if err := o.parentDir(name); err != nil {
		return err
	}
	k, err := o.hostKind(name)
	switch {
	case err != nil:
		return err
	case k == realAbsent:
		return fs.ErrNotExist
	case k == realDir && !dir:
		return errIsDir
	case k != realDir && dir:
		return errNotDir
	}
	if dir {
		full, err := o.dirHasChildren(name)
		if err != nil {
			return err
		}
		if full {
			return errNotEmpty
		}
	}
	return o.hide(name)
}

// dirHasChildren reports whether the directory name, as the code sees it,
// has entries: its own in the layer, or host entries without a whiteout.
func (o *ovBackend) dirHasChildren(name string) (bool, error) {
	if o.liveKids(name) {
		return true, nil
	}
	if e, host := o.look(name); e != nil || !host {
		return false, nil
	}
	f, err := o.root.Open(name)
	if err != nil {
		return false, hostErr(err)
	}
	defer f.Close()
	for {
		dirents, err := f.ReadDir(64)
		for _, d := range dirents {
			if e := o.upper[join(name, d.Name())]; e == nil || e.kind != ovDeleted {
				return true, nil
			}
		}
		if errors.Is(err, io.EOF) || len(dirents) == 0 {
			return false, nil
		}
		if err != nil {
			return false, hostErr(err)
		}
	}
}

// ovMove is one entry of a rename's plan.
type ovMove struct {
	to string
	e  *ovEntry
}

func (o *ovBackend) rename(from, to string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	// Errors about the destination name it, as monty-fs's overlay does.
	if err := o.parentDir(to); err != nil {
		return &namedError{err: err, path: o.m.virtual(to)}
	}
	if e, host := o.look(to); e == nil && host {
		if err := o.realPath(to); err != nil {
			return &namedError{err: err, path: o.m.virtual(to)}
		}
	}
	if err := o.parentDir(from); err != nil {
		return err
	}
	src, host := o.look(from)
	if src == nil && host {
		k, err := o.hostKind(from)
		switch {
		case err != nil:
			return err
		case k == realDir:
			src = &ovEntry{kind: ovDir, mtime: time.Now()}
			if fi, err := o.root.Lstat(from); err == nil {
				src.mtime = fi.ModTime()
			}
		case k == realFile:
			fi, err := o.root.Lstat(from)
			if err != nil || !fi.Mode().IsRegular() {
				return fs.ErrNotExist // a special file has nothing to refer to
			}
			src = &ovEntry{kind: ovRef, ref: from, size: fi.Size(), mtime: fi.ModTime()}
		}
	}
	if src == nil || src.kind == ovDeleted {
		return fs.ErrNotExist
	}
	srcDir := src.kind == ovDir

	// What the destination is now.
	dst, dstHost := o.look(to)
	dstDir, dstExists := false, false
	switch {
	case dst != nil && dst.kind != ovDeleted:
		dstDir, dstExists = dst.kind == ovDir, true
	case dst == nil && dstHost:
		if fi, err := o.root.Stat(to); err == nil {
			dstDir, dstExists = fi.IsDir(), true
		}
	}
	switch {
	case dstExists && dstDir && !srcDir:
		return errIsDir
	case dstExists && !dstDir && srcDir:
		return errNotDir
	case srcDir && strings.HasPrefix(to, from+"/"):
		return errInvalid // into itself
	case from == to:
		return nil
	}
	if dstExists && dstDir {
		full, err := o.dirHasChildren(to)
		if err != nil {
			return err
		}
		if full {
			return errNotEmpty
		}
	}

	// The plan: the source, what the layer holds below it, and (for a
	// host directory) references to the host entries below it.
	var freed int64
	if e := o.upper[from]; e != nil {
		freed += e.cost(from)
	}
	if e := o.upper[to]; e != nil {
		freed += e.cost(to)
	}
	o.below(to, func(k string, e *ovEntry) { freed += e.cost(k) })
	budget := o.limit - o.used + freed
	plan := []ovMove{{to, src}}
	budget -= src.cost(to)
	o.below(from, func(k string, e *ovEntry) {
		budget += e.cost(k)
		if e.kind != ovDeleted {
			nk := to + k[len(from):]
			plan = append(plan, ovMove{nk, e})
			budget -= e.cost(nk)
		}
	})
	if srcDir && o.upper[from] == nil {
		var err error
		if plan, budget, err = o.planHost(from, to, plan, budget); err != nil {
			return err
		}
	}
	// The source's whiteout, if the host has something there.
	whiteout := o.hostHas(from)
	if whiteout {
		budget -= ovEntryOverhead + int64(len(from))
	}
	if budget < 0 {
		return memoryLimitError(o.limit)
	}

	o.dropBelow(to)
	o.dropBelow(from)
	o.drop(from)
	for _, mv := range plan {
		o.set(mv.to, mv.e)
	}
	if whiteout {
		o.set(from, &ovEntry{kind: ovDeleted, mtime: time.Now()})
	}
	return nil
}

// planHost adds references to the host entries below the host directory
// from (those the layer does not already answer for) to a rename's plan,
// within budget. A symlink below refuses the whole rename, as does a name
// that is not UTF-8 (the sandbox could not name it); special files stay
// behind.
func (o *ovBackend) planHost(from, to string, plan []ovMove, budget int64) ([]ovMove, int64, error) {
	dirs := []string{from}
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		f, err := o.root.Open(dir)
		if err != nil {
			continue // gone meanwhile: nothing to move
		}
		for {
			dirents, rerr := f.ReadDir(256)
			for _, d := range dirents {
				k := join(dir, d.Name())
				if o.upper[k] != nil {
					continue // moved with the layer, or deleted
				}
				if !utf8.ValidString(d.Name()) {
					f.Close()
					return nil, 0, &runtime.Exception{Type: "OSError", Message: "directory contains an entry with a non-UTF-8 name: " + quote(o.m.virtual(from))}
				}
				nk := to + k[len(from):]
				var e *ovEntry
				switch t := d.Type(); {
				case t&fs.ModeSymlink != 0:
					f.Close()
					return nil, 0, fs.ErrPermission
				case t.IsDir():
					e = &ovEntry{kind: ovDir, mtime: time.Now()}
					if fi, err := d.Info(); err == nil {
						e.mtime = fi.ModTime()
					}
					dirs = append(dirs, k)
				case t.IsRegular():
					fi, err := d.Info()
					if err != nil {
						continue
					}
					e = &ovEntry{kind: ovRef, ref: k, size: fi.Size(), mtime: fi.ModTime()}
				default:
					continue
				}
				plan = append(plan, ovMove{nk, e})
				if budget -= e.cost(nk); budget < 0 {
					f.Close()
					return nil, 0, memoryLimitError(o.limit)
				}
			}
			if rerr != nil || len(dirents) == 0 {
				break
			}
		}
		f.Close()
	}
	return plan, budget, nil
}

func (o *ovBackend) list(name string) ([]scanEntry, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, host := o.look(name)
	switch {
	case e == nil && !host, e != nil && e.kind == ovDeleted:
		return nil, fs.ErrNotExist
	case e != nil && e.kind != ovDir:
		return nil, errNotDir
	}
	var out []scanEntry
	seen := map[string]bool{}
	for c := range o.kids[name] {
		e := o.upper[join(name, c)]
		if e == nil {
			continue // a host directory with entries below it: listed below
		}
		seen[c] = true
		switch e.kind {
		case ovDir:
			out = append(out, scanEntry{name: c, isDir: true})
		case ovFile, ovRef:
			out = append(out, scanEntry{name: c, isFile: true})
		}
	}
	if host {
		if err := o.realPath(name); err != nil {
			return nil, err
		}
		fi, err := o.root.Stat(name)
		switch {
		case err != nil:
			return nil, hostErr(err)
		case !fi.IsDir():
			return nil, errNotDir
		}
		entries, err := listDir(o.root, name)
		if err != nil {
			return nil, err
		}
		for _, d := range entries {
			if seen[d.name] {
				continue
			}
			if d.isSymlink {
				// Never followed, so neither a file nor a directory.
				d.isDir, d.isFile = false, false
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b scanEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
