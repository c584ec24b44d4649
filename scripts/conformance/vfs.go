package main

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// virtualFS is the in-memory tree call-external cases see under /virtual,
// with the native harness's semantics (see VirtualFs in
// scripts/native/src/host.rs): file.txt, data.bin, empty.txt, readonly.txt
// (0o444), subdir/nested.txt, subdir/deep/file.txt; writes change it for the
// rest of the run; paths outside do not exist.
type virtualFS struct {
	tree map[string]*vfsEntry
}

type vfsEntry struct {
	dir  bool
	data []byte
	mode int64
}

func newVirtualFS() *virtualFS {
	file := func(s string, mode int64) *vfsEntry { return &vfsEntry{data: []byte(s), mode: mode} }
	return &virtualFS{tree: map[string]*vfsEntry{
		"/virtual":                      {dir: true},
		"/virtual/file.txt":             file("hello world\n", 0o644),
		"/virtual/data.bin":             file("\x00\x01\x02\x03", 0o644),
		"/virtual/empty.txt":            file("", 0o644),
		"/virtual/readonly.txt":         file("readonly", 0o444),
		"/virtual/subdir":               {dir: true},
		"/virtual/subdir/nested.txt":    file("nested content", 0o644),
		"/virtual/subdir/deep":          {dir: true},
		"/virtual/subdir/deep/file.txt": file("deep", 0o644),
	}}
}

// children lists the full paths directly under dir, sorted.
func (v *virtualFS) children(dir string) []string {
	prefix := dir + "/"
	var out []string
	for k := range v.tree {
		if rest, ok := strings.CutPrefix(k, prefix); ok && !strings.Contains(rest, "/") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// vfsParent is the parent of an absolute normalised path; "" for "/".
func vfsParent(p string) string {
	i := strings.LastIndex(p, "/")
	switch {
	case i == 0 && len(p) > 1:
		return "/"
	case i > 0:
		return p[:i]
	}
	return ""
}

func osErr(typ string, errno int, what, p string) *excError {
	return exc(typ, "[Errno %d] %s: '%s'", errno, what, p)
}

func notFound(p string) *excError {
	return osErr("FileNotFoundError", 2, "No such file or directory", p)
}

func (v *virtualFS) parentIsDir(p string) *excError {
	e, ok := v.tree[vfsParent(p)]
	switch {
	case !ok:
		return notFound(p)
	case !e.dir:
		return osErr("NotADirectoryError", 20, "Not a directory", p)
	}
	return nil
}

func (v *virtualFS) write(p string, data []byte, appendTo bool) *excError {
	if err := v.parentIsDir(p); err != nil {
		return err
	}
	e, ok := v.tree[p]
	switch {
	case ok && e.dir:
		return osErr("IsADirectoryError", 21, "Is a directory", p)
	case ok:
		if !appendTo {
			e.data = nil
		}
		e.data = append(e.data, data...)
	default:
		v.tree[p] = &vfsEntry{data: slices.Clone(data), mode: 0o644}
	}
	return nil
}

func statResult(mode, nlink, size int64) object.NamedTuple {
	return object.NamedTuple{
		TypeName: "StatResult",
		Fields:   []string{"st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime", "st_ctime"},
		Values: []object.Value{object.Int(mode), object.Int(0), object.Int(0), object.Int(nlink), object.Int(0), object.Int(0),
			object.Int(size), object.Float(vfsMtime), object.Float(vfsMtime), object.Float(vfsMtime)},
	}
}

// handle serves the path calls; ok is false for calls it does not implement.
func (v *virtualFS) handle(c *runtime.OSCall) (runtime.Answer, bool) {
	if !strings.HasPrefix(c.Name, "Path.") || len(c.Args) == 0 {
		return runtime.Answer{}, false
	}
	p := normalizePath(pathString(c.Args[0]))
	e, exists := v.tree[p]
	isFile, isDir := exists && !e.dir, exists && e.dir
	var (
		out object.Value
		err *excError
	)
	switch c.Name {
	case "Path.exists":
		out = object.Bool(exists)
	case "Path.is_file":
		out = object.Bool(isFile)
	case "Path.is_dir":
		out = object.Bool(isDir)
	case "Path.is_symlink":
		out = object.Bool(false)
	case "Path.read_text", "Path.read_bytes":
		switch {
		case isFile && c.Name == "Path.read_bytes":
			out = object.Bytes(slices.Clone(e.data))
		case isFile && !utf8.Valid(e.data):
			err = exc("UnicodeDecodeError", "'utf-8' codec can't decode bytes")
		case isFile:
			out = object.Str(e.data)
		case isDir:
			err = osErr("IsADirectoryError", 21, "Is a directory", p)
		default:
			err = notFound(p)
		}
	case "Path.stat":
		switch {
		case isFile:
			mode := e.mode
			if mode < 0o1000 {
				mode |= 0o100000
			}
			out = statResult(mode, 1, int64(len(e.data)))
		case isDir:
			out = statResult(0o755|0o040000, 2, 4096)
		default:
			err = notFound(p)
		}
	case "Path.iterdir":
		switch {
		case isDir:
			l := object.List{}
			for _, k := range v.children(p) {
				l = append(l, object.Str(k))
			}
			out = l
		case isFile:
			err = osErr("NotADirectoryError", 20, "Not a directory", p)
		default:
			err = notFound(p)
		}
	case "Path.resolve", "Path.absolute":
		out = object.Path(p)
	case "Path.write_text", "Path.append_text":
		data, _ := c.Arg(1, "data")
		s, _ := data.(object.Str)
		if err = v.write(p, []byte(s), c.Name == "Path.append_text"); err == nil {
			out = object.Int(utf8.RuneCountInString(string(s)))
		}
	case "Path.write_bytes", "Path.append_bytes":
		data, _ := c.Arg(1, "data")
		b, _ := data.(object.Bytes)
		if err = v.write(p, b, c.Name == "Path.append_bytes"); err == nil {
			out = object.Int(len(b))
		}
	case "Path.mkdir":
		err = v.mkdir(p, kwTrue(c, "parents"), kwTrue(c, "exist_ok"))
		out = object.None{}
	case "Path.unlink":
		switch {
		case isFile:
			delete(v.tree, p)
			out = object.None{}
		case isDir:
			err = osErr("IsADirectoryError", 21, "Is a directory", p)
		default:
			err = notFound(p)
		}
	case "Path.rmdir":
		switch {
		case isDir && len(v.children(p)) > 0:
			err = osErr("OSError", 39, "Directory not empty", p)
		case isDir:
			delete(v.tree, p)
			out = object.None{}
		case isFile:
			err = osErr("NotADirectoryError", 20, "Not a directory", p)
		default:
			err = notFound(p)
		}
	case "Path.rename":
		dstV, _ := c.Arg(1, "dst")
		dst := normalizePath(pathString(dstV))
		// None, as monty-fs answers: Path.rename/replace build their own
		// result, os.rename/replace return the answer as is.
		if err = v.rename(p, dst); err == nil {
			out = object.None{}
		}
	default:
		return runtime.Answer{}, false
	}
	return answer(out, err), true
}

func kwTrue(c *runtime.OSCall, name string) bool {
	v, ok := c.Kwarg(name)
	b, _ := v.(object.Bool)
	return ok && bool(b)
}

func (v *virtualFS) mkdir(p string, parents, existOK bool) *excError {
	if e, ok := v.tree[p]; ok {
		if e.dir && existOK {
			return nil
		}
		return osErr("FileExistsError", 17, "File exists", p)
	}
	if parents {
		chain := []string{p}
		cur := vfsParent(p)
		for cur != "" {
			if _, ok := v.tree[cur]; ok {
				break
			}
			chain = append(chain, cur)
			cur = vfsParent(cur)
		}
		if cur == "" {
			return notFound(p)
		}
		if !v.tree[cur].dir {
			return osErr("NotADirectoryError", 20, "Not a directory", p)
		}
		for _, d := range chain {
			v.tree[d] = &vfsEntry{dir: true}
		}
		return nil
	}
	if err := v.parentIsDir(p); err != nil {
		return err
	}
	v.tree[p] = &vfsEntry{dir: true}
	return nil
}

func (v *virtualFS) rename(src, dst string) *excError {
	if _, ok := v.tree[src]; !ok {
		return notFound(src)
	}
	if err := v.parentIsDir(dst); err != nil {
		return err
	}
	moved := map[string]*vfsEntry{}
	for k, e := range v.tree {
		if k == src || strings.HasPrefix(k, src+"/") {
			moved[dst+k[len(src):]] = e
			delete(v.tree, k)
		}
	}
	for k, e := range moved {
		v.tree[k] = e
	}
	return nil
}

// normalizePath is monty's normalize_virtual_path for the absolute paths
// the interpreter sends (already normalised on the wire; kept for
// robustness): collapse "//", ".", "..".
func normalizePath(p string) string {
	if p == "" {
		return p
	}
	var parts []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, s)
		}
	}
	return "/" + strings.Join(parts, "/")
}
