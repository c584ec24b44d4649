package runtime

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
)

// DirFS mounts a host directory at a virtual directory. Access is confined
// with os.Root: "..", absolute paths and symbolic links cannot reach
// outside the directory, and listings (Path.iterdir, os.scandir, os.walk,
// Path.glob) leave out symbolic links that dangle or lead outside. Errors
// follow monty's own monty-fs mounts. It is safe for concurrent use; Close
// it when done.
type DirFS struct {
	m    mount
	root *os.Root
}

// NewDirFS mounts hostDir at mountPoint (an absolute virtual path such as
// "/data"), read-only unless readWrite is true.
func NewDirFS(hostDir, mountPoint string, readWrite bool) (*DirFS, error) {
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return nil, err
	}
	d := &DirFS{root: root}
	d.m = mount{at: path.Clean("/" + mountPoint), readOnly: !readWrite, fs: (*dirBackend)(d)}
	return d, nil
}

// HandleOS implements OSHandler.
func (d *DirFS) HandleOS(ctx context.Context, call *OSCall) (object.Value, error) {
	return d.m.HandleOS(ctx, call)
}

// Close releases the directory.
func (d *DirFS) Close() error { return d.root.Close() }

type dirBackend DirFS

func (b *dirBackend) stat(name string) (fs.FileInfo, error) { return b.root.Stat(name) }

func (b *dirBackend) readFile(name string) ([]byte, error) {
	fi, err := b.root.Stat(name)
	if err != nil {
		return nil, hostErr(err)
	}
	if fi.IsDir() {
		return nil, errIsDir
	}
	data, err := b.root.ReadFile(name)
	return data, hostErr(err)
}

func (b *dirBackend) writeFile(name string, data []byte, appendTo bool) error {
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := b.root.OpenFile(name, flag, 0o644)
	if err != nil {
		return hostErr(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return hostErr(err)
}

func (b *dirBackend) mkdir(name string, parents bool) error {
	if parents {
		return hostErr(b.root.MkdirAll(name, 0o755))
	}
	return hostErr(b.root.Mkdir(name, 0o755))
}

func (b *dirBackend) remove(name string, dir bool) error {
	fi, err := b.root.Lstat(name)
	if err != nil {
		return hostErr(err)
	}
	switch {
	case dir && !fi.IsDir():
		return errNotDir
	case !dir && fi.IsDir():
		return errIsDir
	}
	return hostErr(b.root.Remove(name))
}

func (b *dirBackend) rename(from, to string) error {
	// os.Root.Rename refuses any existing directory as the destination;
	// POSIX rename(2), which monty-fs uses, replaces an empty one.
	dst, err := b.root.Lstat(to)
	if err == nil && dst.IsDir() {
		src, err := b.root.Lstat(from)
		switch {
		case err != nil:
			return hostErr(err)
		case os.SameFile(src, dst):
			return nil
		case !src.IsDir():
			return errIsDir
		}
		entries, err := b.list(to)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			return errNotEmpty
		}
		if err := b.root.Remove(to); err != nil {
			return hostErr(err)
		}
	}
	return hostErr(b.root.Rename(from, to))
}

func (b *dirBackend) list(name string) ([]scanEntry, error) {
	f, err := b.root.Open(name)
	if err != nil {
		return nil, hostErr(err)
	}
	defer f.Close()
	dirents, err := f.ReadDir(-1)
	if err != nil {
		return nil, hostErr(err)
	}
	out := make([]scanEntry, 0, len(dirents))
	for _, d := range dirents {
		if !utf8.ValidString(d.Name()) {
			continue // sandbox paths are UTF-8: such a name cannot be spelled there
		}
		e := scanEntry{name: d.Name(), isDir: d.IsDir(), isFile: d.Type().IsRegular()}
		if d.Type()&fs.ModeSymlink != 0 {
			// Resolved through the root, so a link leaving the mount (or
			// dangling) is not listed, as monty-fs hides them.
			fi, err := b.root.Stat(path.Join(name, d.Name()))
			if err != nil {
				continue
			}
			e = scanEntry{name: d.Name(), isDir: fi.IsDir(), isFile: fi.Mode().IsRegular(), isSymlink: true}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b scanEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// hostErr maps errno values to the errors pyFSError knows, and hides host
// paths (an os.Root escape attempt reads as permission denied).
func hostErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOTEMPTY):
		return errNotEmpty
	case errors.Is(err, syscall.ENOTDIR):
		return errNotDir
	case errors.Is(err, syscall.EISDIR):
		return errIsDir
	case errors.Is(err, syscall.EINVAL):
		return errInvalid // e.g. a directory renamed into itself
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist), errors.Is(err, fs.ErrPermission):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	// Anything else, including os.Root refusing a path that escapes, reads
	// as permission denied and never shows a host path.
	return fs.ErrPermission
}
