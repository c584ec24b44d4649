package runtime

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/monty-go/monty/object"
)

// MemFS is an in-memory filesystem mounted at a virtual directory. It is
// safe for concurrent use; its contents live as long as the MemFS value.
type MemFS struct {
	m    mount
	mu   sync.Mutex
	tree map[string]*memEntry // by cleaned relative path; "." is the root
}

type memEntry struct {
	dir     bool
	data    []byte
	modTime time.Time
}

// NewMemFS returns an empty filesystem mounted at mountPoint (an absolute
// virtual path such as "/" or "/tmp").
func NewMemFS(mountPoint string) *MemFS {
	f := &MemFS{tree: map[string]*memEntry{".": {dir: true, modTime: time.Now()}}}
	f.m = mount{at: path.Clean("/" + mountPoint), fs: (*memBackend)(f)}
	return f
}

// HandleOS implements OSHandler.
func (f *MemFS) HandleOS(ctx context.Context, call *OSCall) (object.Value, error) {
	return f.m.HandleOS(ctx, call)
}

// WriteFile creates or replaces a file (and its parent directories), for
// seeding the filesystem from Go. name is a virtual path inside the mount.
func (f *MemFS) WriteFile(name string, data []byte) error {
	rel, ok := f.m.rel(name)
	if !ok {
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

// memBackend implements fileSystem over the MemFS tree.
type memBackend MemFS

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
	if !ok {
		e = &memEntry{}
		b.tree[name] = e
	}
	if appendTo {
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
		for _, p := range slices.Backward(chain) {
			e, ok := b.tree[p]
			if ok && !e.dir {
				return errNotDir
			}
			if !ok {
				b.tree[p] = &memEntry{dir: true, modTime: time.Now()}
			}
		}
		return nil
	}
	if err := b.parentDir(name); err != nil {
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
	if old, ok := b.tree[to]; ok {
		switch {
		case old.dir && !e.dir:
			return errIsDir
		case !old.dir && e.dir:
			return errNotDir
		case old.dir && len(b.children(to)) > 0:
			return errNotEmpty
		}
	}
	if e.dir {
		for k, v := range b.tree {
			if strings.HasPrefix(k, from+"/") {
				delete(b.tree, k)
				b.tree[to+k[len(from):]] = v
			}
		}
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
