package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// DirFS mounts a host directory at a virtual directory. Access is confined
// with os.Root: "..", absolute paths and symbolic links cannot reach
// outside the directory, and listings (Path.iterdir, os.scandir, os.walk,
// Path.glob) leave out symbolic links that dangle or lead outside. Errors
// follow monty's own monty-fs mounts. It is safe for concurrent use; Close
// it when done.
type DirFS struct {
	m      mount
	root   *os.Root
	quota  *writeQuota
	memory int64 // largest file read
}

// DirFSOptions configures OpenDirFS. It is a plain value.
type DirFSOptions struct {
	// ReadWrite lets the code create, change, rename and delete files in
	// the host directory; otherwise every write raises PermissionError
	// "[Errno 30] Read-only file system". What the code writes is
	// untrusted: never execute or import it on the host.
	ReadWrite bool
	// WriteLimit caps the bytes the code may write through the mount over
	// the DirFS's life (0: no limit). A write that would pass it raises
	// OSError("disk write limit of … exceeded") and writes nothing. Bytes
	// are spent, not held: truncating or deleting gives none back, and
	// appending counts only the appended bytes (monty-fs's rule).
	WriteLimit int64
	// MemoryLimit is the largest file one read may return (0:
	// DefaultMountMemoryLimit); a larger one raises MemoryError("mount
	// memory usage limit of … exceeded") before it is read into memory.
	MemoryLimit int64
}

// OpenDirFS mounts hostDir at mountPoint, an absolute virtual path such as
// "/data". The directory is opened once, here: the mount stays attached to
// it whatever later happens to its name. Invalid options and a host
// directory that cannot be opened return errors matching ErrInvalidOption
// (and the underlying error, such as fs.ErrNotExist).
func OpenDirFS(hostDir, mountPoint string, opts DirFSOptions) (*DirFS, error) {
	at, root, err := openMount(hostDir, mountPoint, opts.WriteLimit, opts.MemoryLimit)
	if err != nil {
		return nil, err
	}
	d := &DirFS{root: root, quota: newWriteQuota(opts.WriteLimit), memory: memoryLimit(opts.MemoryLimit)}
	d.m = mount{at: at, readOnly: !opts.ReadWrite, fs: (*dirBackend)(d)}
	return d, nil
}

// openMount checks a mount's point and limits and opens its host
// directory (OpenDirFS and OpenOverlayFS). It returns the cleaned mount
// point.
func openMount(hostDir, mountPoint string, writeLimit, memLimit int64) (string, *os.Root, error) {
	switch {
	case !strings.HasPrefix(mountPoint, "/"):
		return "", nil, fmt.Errorf("%w: mount point %q must be an absolute virtual path, such as /data", runtime.ErrInvalidOption, mountPoint)
	case strings.ContainsRune(mountPoint, 0):
		return "", nil, fmt.Errorf("%w: mount point %q contains a NUL byte", runtime.ErrInvalidOption, mountPoint)
	case writeLimit < 0 || memLimit < 0:
		return "", nil, fmt.Errorf("%w: mount limits must not be negative (0 means the default)", runtime.ErrInvalidOption)
	case hostDir == "":
		return "", nil, fmt.Errorf("%w: the host directory of a mount is empty", runtime.ErrInvalidOption)
	}
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return "", nil, fmt.Errorf("%w: mount host directory: %w", runtime.ErrInvalidOption, err)
	}
	return path.Clean(mountPoint), root, nil
}

func memoryLimit(n int64) int64 {
	if n == 0 {
		return DefaultMountMemoryLimit
	}
	return n
}

// HandleOS implements OSHandler.
func (d *DirFS) HandleOS(ctx context.Context, call *runtime.OSCall) (object.Value, error) {
	return d.m.HandleOS(ctx, call)
}

// MountPoint returns the virtual directory the host directory appears at.
func (d *DirFS) MountPoint() string { return d.m.at }

// WriteBytesUsed returns the bytes written through the mount so far, as its
// write limit counts them (0 when it has no limit).
func (d *DirFS) WriteBytesUsed() int64 { return d.quota.spent() }

// Close releases the directory.
func (d *DirFS) Close() error { return d.root.Close() }

type dirBackend DirFS

func (b *dirBackend) stat(name string) (fs.FileInfo, error) {
	fi, err := b.root.Stat(name)
	return fi, hostErr(err)
}

func (b *dirBackend) isSymlink(name string) bool {
	fi, err := b.root.Lstat(name)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

func (b *dirBackend) readFile(name string) ([]byte, error) {
	return readRegular(b.root, name, b.memory, b.memory)
}

// readRegular reads a regular file through root, refusing directories
// (errIsDir) and special files (permission denied, as monty-fs does: a FIFO
// is opened without blocking, then refused). At most avail bytes are read
// into memory; a larger file raises the memory limit exception for limit.
func readRegular(root *os.Root, name string, avail, limit int64) ([]byte, error) {
	f, err := openRegular(root, name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, hostErr(err)
	}
	if fi.Size() > avail {
		return nil, memoryLimitError(limit)
	}
	// The size only sizes the buffer: what counts is what is read, so a
	// file growing meanwhile cannot pass the limit.
	buf := make([]byte, 0, fi.Size()+1)
	r := io.LimitReader(f, avail+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, hostErr(err)
		}
	}
	if int64(len(buf)) > avail {
		return nil, memoryLimitError(limit)
	}
	return buf, nil
}

// openRegular opens name through root with flag (plus O_NONBLOCK, so that
// opening a FIFO returns at once) and refuses anything but a regular file.
func openRegular(root *os.Root, name string, flag int) (*os.File, error) {
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, hostErr(err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, hostErr(err)
	case fi.IsDir():
		f.Close()
		return nil, errIsDir
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, fs.ErrPermission
	}
	return f, nil
}

func (b *dirBackend) writeFile(name string, data []byte, appendTo bool) error {
	if fi, err := b.root.Stat(name); err == nil && fi.IsDir() {
		// Before opening: O_WRONLY on a directory fails with EISDIR on
		// Linux, but not everywhere.
		return errIsDir
	}
	n := int64(len(data))
	if err := b.quota.reserve(n); err != nil {
		return err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := openRegular(b.root, name, flag)
	if err != nil {
		b.quota.refund(n)
		return err
	}
	w, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	b.quota.refund(n - int64(w)) // what reached the disk stays spent
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

func (b *dirBackend) list(name string) ([]scanEntry, error) { return listDir(b.root, name) }

// listDir lists a host directory as fileSystem.list describes it.
func listDir(root *os.Root, name string) ([]scanEntry, error) {
	f, err := root.Open(name)
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
			fi, err := root.Stat(path.Join(name, d.Name()))
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
