package vfs

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// fileSystem is the storage behind MemFS, DirFS and OverlayFS. Paths are
// relative to the mount, slash-separated, cleaned, never starting with "/"
// or ".."; "." is the mount's root.
type fileSystem interface {
	stat(name string) (fs.FileInfo, error)
	readFile(name string) ([]byte, error)
	writeFile(name string, data []byte, appendTo bool) error
	mkdir(name string, parents bool) error
	remove(name string, dir bool) error
	rename(from, to string) error
	// list returns a directory's visible entries sorted by name, each
	// described as os.DirEntry would (a symlink by its target inside the
	// mount; links that dangle or leave the mount are left out).
	list(name string) ([]scanEntry, error)
}

// symlinkReporter is a fileSystem that can tell a symbolic link (without
// following it) for Path.is_symlink; without it the answer is False.
type symlinkReporter interface {
	isSymlink(name string) bool
}

// mount dispatches the filesystem OS calls under a virtual directory to a
// fileSystem.
type mount struct {
	at       string // cleaned absolute virtual path, "/" for the root
	readOnly bool
	fs       fileSystem
}

// rel maps a virtual path into the mount, or reports it outside.
func (m *mount) rel(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	p = path.Clean(p)
	if m.at == "/" {
		if p == "/" {
			return ".", true
		}
		return p[1:], true
	}
	if p == m.at {
		return ".", true
	}
	if strings.HasPrefix(p, m.at+"/") {
		return p[len(m.at)+1:], true
	}
	return "", false
}

func (m *mount) virtual(rel string) string { return path.Join(m.at, rel) }

// fsCalls lists the OS call names a mount serves.
var writeCalls = map[string]bool{
	"Path.write_text": true, "Path.append_text": true, "Path.write_bytes": true, "Path.append_bytes": true,
	"Path.mkdir": true, "Path.unlink": true, "Path.rmdir": true, "Path.rename": true,
}

// HandleOS serves the filesystem OS calls whose path lies inside the mount.
func (m *mount) HandleOS(_ context.Context, call *runtime.OSCall) (object.Value, error) {
	if !strings.HasPrefix(call.Name, "Path.") && call.Name != "open" {
		return nil, runtime.ErrNotHandled
	}
	p, err := call.Str(0, "path")
	if err != nil {
		return nil, runtime.ErrNotHandled
	}
	name, ok := m.rel(p)
	if !ok {
		if call.Name == "Path.rename" {
			// One end inside, the other outside: refused here rather than
			// offered to a later handler, which would not apply this
			// mount's access mode.
			if dst, err := call.Str(1, "dst"); err == nil {
				if _, in := m.rel(dst); in {
					return nil, crossDevice(p, dst)
				}
			}
		}
		return nil, runtime.ErrNotHandled
	}
	if err := checkPath(call.Name, p, false); err != nil {
		if existenceChecks[call.Name] {
			// CPython's predicates answer False rather than raise.
			return object.Bool(false), nil
		}
		return nil, err
	}
	if call.Name == "Path.rename" {
		// The destination gets the same checks, and must lie in this mount,
		// before anything else (monty-fs routes a rename on both ends).
		dst, err := call.Str(1, "dst")
		if err != nil {
			return nil, err
		}
		if err := checkPath(call.Name, dst, true); err != nil {
			return nil, err
		}
		if _, ok := m.rel(dst); !ok {
			return nil, crossDevice(p, dst)
		}
	}
	write := writeCalls[call.Name]
	var mode string
	if call.Name == "open" {
		mode, _ = call.Str(1, "mode")
		write = strings.ContainsAny(mode, "wax+")
	}
	if write && m.readOnly {
		return nil, &runtime.Exception{Type: "PermissionError", Message: "[Errno 30] Read-only file system: " + quote(p)}
	}
	v, err := m.serve(call, name, p, mode)
	return v, pyFSError(err, p)
}

// existenceChecks are the predicates that answer False instead of raising.
var existenceChecks = map[string]bool{
	"Path.exists": true, "Path.is_file": true, "Path.is_dir": true, "Path.is_symlink": true,
}

// Path limits, as monty-fs applies them to every path before serving it:
// PATH_MAX bytes in all, NAME_MAX bytes per component, and at most
// maxPathDepth components (counting the empty one before a leading "/").
const (
	maxPathBytes = 4096
	maxNameBytes = 255
	maxPathDepth = 64
)

// checkPath applies checkPathLength, then refuses a NUL byte with the
// ValueError CPython raises for the call (monty-fs's wording; the
// interpreter refuses NUL bytes before asking the host, so this guards
// direct callers).
func checkPath(callName, p string, dst bool) error {
	if err := checkPathLength(p); err != nil {
		return err
	}
	if !strings.ContainsRune(p, 0) {
		return nil
	}
	msg := "embedded null byte"
	switch callName {
	case "Path.mkdir":
		msg = "mkdir: embedded null character in path"
	case "Path.unlink":
		msg = "unlink: embedded null character in path"
	case "Path.rmdir":
		msg = "rmdir: embedded null character in path"
	case "Path.stat":
		msg = "stat: embedded null character in path"
	case "Path.iterdir", "Path.scan":
		msg = "scandir: embedded null character in path"
	case "Path.resolve":
		msg = "lstat: embedded null character in path"
	case "Path.rename":
		msg = "rename: embedded null character in src"
		if dst {
			msg = "rename: embedded null character in dst"
		}
	}
	return &runtime.Exception{Type: "ValueError", Message: msg}
}

func crossDevice(src, dst string) error {
	return &runtime.Exception{Type: "OSError", Message: "[Errno 18] Invalid cross-device link: " + quote(src) + " -> " + quote(dst)}
}

// checkPathLength refuses an over-long path with monty-fs's
// "[Errno 36] File name too long" (the path elided in the middle).
func checkPathLength(p string) error {
	tooLong := len(p) > maxPathBytes
	for i, c := range strings.Split(p, "/") {
		if tooLong || i >= maxPathDepth || len(c) > maxNameBytes {
			tooLong = true
			break
		}
	}
	if !tooLong {
		return nil
	}
	return &runtime.Exception{Type: "OSError", Message: "[Errno 36] File name too long: " + quote(elide(p))}
}

// elide shortens a path longer than 40 characters to its first and last 20,
// joined by "…", as monty-fs names over-long paths in errors.
func elide(p string) string {
	const edge = 20
	r := []rune(p)
	if len(r) <= 2*edge {
		return p
	}
	return string(r[:edge]) + "…" + string(r[len(r)-edge:])
}

// quote spells a path as Python's repr does, as CPython's OSError messages do.
func quote(p string) string { return object.Repr(object.Str(p)) }

func (m *mount) serve(call *runtime.OSCall, name, p, mode string) (object.Value, error) {
	switch call.Name {
	case "Path.exists", "Path.is_file", "Path.is_dir":
		fi, err := m.fs.stat(name)
		if err != nil {
			return object.Bool(false), nil
		}
		switch call.Name {
		case "Path.is_file":
			return object.Bool(fi.Mode().IsRegular()), nil
		case "Path.is_dir":
			return object.Bool(fi.IsDir()), nil
		}
		return object.Bool(true), nil
	case "Path.is_symlink":
		if l, ok := m.fs.(symlinkReporter); ok {
			return object.Bool(l.isSymlink(name)), nil
		}
		return object.Bool(false), nil
	case "Path.read_text", "Path.read_bytes":
		b, err := m.fs.readFile(name)
		if err != nil {
			return nil, err
		}
		if call.Name == "Path.read_bytes" {
			return object.Bytes(b), nil
		}
		if err := checkUTF8(b); err != nil {
			return nil, err
		}
		return object.Str(b), nil
	case "Path.write_text", "Path.append_text", "Path.write_bytes", "Path.append_bytes":
		data, ok := call.Arg(1, "data")
		if !ok {
			return nil, &runtime.Exception{Type: "TypeError", Message: "missing data"}
		}
		var b []byte
		n := 0
		switch d := data.(type) {
		case object.Str:
			b, n = []byte(d), len([]rune(string(d)))
		case object.Bytes:
			b, n = []byte(d), len(d)
		default:
			return nil, &runtime.Exception{Type: "TypeError", Message: "data must be str or bytes"}
		}
		err := m.fs.writeFile(name, b, strings.Contains(call.Name, "append"))
		return object.Int(n), err
	case "Path.stat":
		fi, err := m.fs.stat(name)
		if err != nil {
			return nil, err
		}
		return statResult(fi), nil
	case "Path.iterdir":
		entries, err := m.fs.list(name)
		if err != nil {
			return nil, err
		}
		out := make(object.List, len(entries))
		for i, e := range entries {
			out[i] = object.Path(m.virtual(path.Join(name, e.name)))
		}
		return out, nil
	case "Path.resolve", "Path.absolute":
		return object.Path(m.virtual(name)), nil
	case "Path.mkdir":
		parents, existOK := kwBool(call, "parents"), kwBool(call, "exist_ok")
		if parents {
			// Creating the missing parents succeeds on an existing
			// directory, so check first, as monty-fs does: an existing
			// directory is an error unless exist_ok, a file always is.
			if fi, err := m.fs.stat(name); err == nil {
				if fi.IsDir() && existOK {
					return object.None{}, nil
				}
				return nil, fs.ErrExist
			}
		}
		err := m.fs.mkdir(name, parents)
		if errors.Is(err, fs.ErrExist) && existOK {
			if fi, serr := m.fs.stat(name); serr == nil && fi.IsDir() {
				err = nil
			}
		}
		return object.None{}, err
	case "Path.unlink":
		return object.None{}, m.fs.remove(name, false)
	case "Path.rmdir":
		if name == "." {
			// The mount's root has no name inside the mount.
			return nil, fs.ErrPermission
		}
		return object.None{}, m.fs.remove(name, true)
	case "Path.rename":
		dst, _ := call.Str(1, "dst") // checked by HandleOS
		to, _ := m.rel(dst)
		for _, end := range [][2]string{{name, p}, {to, dst}} {
			if end[0] == "." {
				// The mount's root has no name inside the mount.
				return nil, &runtime.Exception{Type: "PermissionError", Message: "[Errno 13] Permission denied: " + quote(end[1])}
			}
		}
		// monty-fs answers None (os.rename and os.replace return it;
		// Path.rename builds its result in the sandbox).
		return object.None{}, nameErr(m.fs.rename(name, to), dst)
	case "Path.scan":
		return m.scan(call, name, p)
	case "open":
		return m.open(name, p, mode)
	}
	return nil, &runtime.Exception{Type: "OSError", Message: call.Name + " is not supported by this filesystem"}
}

// open checks the mode against the file and returns the handle the
// interpreter reads and writes through later Path calls.
func (m *mount) open(name, p, mode string) (object.Value, error) {
	fi, err := m.fs.stat(name)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(mode, "wxa") {
		return nil, err // a path the mount refuses, not a missing file
	}
	switch {
	case exists && fi.IsDir():
		return nil, &runtime.Exception{Type: "IsADirectoryError", Message: "[Errno 21] Is a directory: '" + p + "'"}
	case strings.Contains(mode, "x") && exists:
		return nil, fs.ErrExist
	case strings.ContainsAny(mode, "wx"):
		if err := m.fs.writeFile(name, nil, false); err != nil {
			return nil, err
		}
	case strings.Contains(mode, "a"):
		if err := m.fs.writeFile(name, nil, true); err != nil {
			return nil, err
		}
	case !exists:
		return nil, fs.ErrNotExist
	}
	return object.File{Path: m.virtual(name), Mode: mode}, nil
}

func kwBool(call *runtime.OSCall, name string) bool {
	v, ok := call.Kwarg(name)
	if !ok {
		return false
	}
	b, _ := v.(object.Bool)
	return bool(b)
}

func statResult(fi fs.FileInfo) object.Value {
	mode := int64(fi.Mode().Perm())
	size := fi.Size()
	if fi.IsDir() {
		mode |= 0o040000
		size = 4096
	} else {
		mode |= 0o100000
	}
	mt := object.Float(float64(fi.ModTime().UnixNano()) / float64(time.Second))
	return object.NamedTuple{
		TypeName: "StatResult",
		Fields:   []string{"st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime", "st_ctime"},
		Values: []object.Value{object.Int(mode), object.Int(0), object.Int(0), object.Int(1), object.Int(0), object.Int(0),
			object.Int(size), mt, mt, mt},
	}
}

// pyFSError turns filesystem errors into the Python exceptions CPython raises.
func pyFSError(err error, p string) error {
	if err == nil {
		return nil
	}
	var exc *runtime.Exception
	if errors.As(err, &exc) {
		return err
	}
	var named *namedError
	if errors.As(err, &named) {
		p = named.path
	}
	q := " " + quote(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &runtime.Exception{Type: "FileNotFoundError", Message: "[Errno 2] No such file or directory:" + q}
	case errors.Is(err, fs.ErrExist):
		return &runtime.Exception{Type: "FileExistsError", Message: "[Errno 17] File exists:" + q}
	case errors.Is(err, fs.ErrPermission):
		return &runtime.Exception{Type: "PermissionError", Message: "[Errno 13] Permission denied:" + q}
	case errors.Is(err, errIsDir):
		return &runtime.Exception{Type: "IsADirectoryError", Message: "[Errno 21] Is a directory:" + q}
	case errors.Is(err, errNotDir):
		return &runtime.Exception{Type: "NotADirectoryError", Message: "[Errno 20] Not a directory:" + q}
	case errors.Is(err, errNotEmpty):
		return &runtime.Exception{Type: "OSError", Message: "[Errno 39] Directory not empty:" + q}
	case errors.Is(err, errInvalid):
		return &runtime.Exception{Type: "OSError", Message: "[Errno 22] Invalid argument:" + q}
	}
	return &runtime.Exception{Type: "OSError", Message: err.Error()}
}

// namedError reports a filesystem error about another path than the
// call's first argument (a rename's destination).
type namedError struct {
	err  error
	path string // virtual path
}

func (e *namedError) Error() string { return e.path + ": " + e.err.Error() }
func (e *namedError) Unwrap() error { return e.err }

// nameErr marks the backend errors that concern a rename's destination
// (directory not empty) as naming it.
func nameErr(err error, dst string) error {
	if errors.Is(err, errNotEmpty) {
		return &namedError{err: err, path: dst}
	}
	return err
}

var (
	errIsDir    = errors.New("is a directory")
	errNotDir   = errors.New("not a directory")
	errNotEmpty = errors.New("directory not empty")
	errInvalid  = errors.New("invalid argument")
)
