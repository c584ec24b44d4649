package vfs_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
	"github.com/monty-go/monty/runtime/vfs"
)

// hostTree describes every entry below dir (type, permissions, contents or
// link target), to check that a host directory is byte-for-byte unchanged.
func hostTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[rel] = desc + " " + fi.ModTime().String()
		return nil
	}))
	return out
}

// writeTree creates files (name → contents; a name ending in / is a
// directory) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
}

func openOverlay(t *testing.T, dir string, opts vfs.OverlayOptions) *vfs.OverlayFS {
	t.Helper()
	o, err := vfs.OpenOverlayFS(dir, "/data", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// TestOverlayHostUnchanged: a run that writes, appends to host files,
// deletes host files and directories, renames host files and directories
// and creates new ones sees all of it; the host directory does not change
// by a byte, and a fresh overlay sees the original.
func TestOverlayHostUnchanged(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"keep.txt": "keep", "log.txt": "line1\n", "gone.txt": "gone", "old.txt": "old",
		"tree/a.txt": "a", "tree/sub/b.txt": "b", "empty/": "", "doomed/x.txt": "x",
	})
	before := hostTree(t, dir)
	it := runtimetest.NewInterp(t)
	o := openOverlay(t, dir, vfs.OverlayOptions{})
	h := &runtime.Host{OS: o}
	v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
d = Path('/data')
(d / 'keep.txt').write_text('changed')
(d / 'log.txt').append_text('line2\n')
with open('/data/log.txt', 'a') as f:
    f.write('line3\n')
(d / 'gone.txt').unlink()
(d / 'doomed' / 'x.txt').unlink()
(d / 'doomed').rmdir()
(d / 'empty').rmdir()
(d / 'old.txt').rename(d / 'new.txt')
os.rename('/data/tree', '/data/moved')
(d / 'moved' / 'sub' / 'c.txt').write_text('c')
(d / 'made' / 'deep').mkdir(parents=True)
(d / 'made' / 'deep' / 'f.bin').write_bytes(b'\x00\x01')
sorted(p.name for p in d.iterdir())
`)
	require.NoError(t, err)
	assert.Equal(t, strList("keep.txt", "log.txt", "made", "moved", "new.txt"), v)
	v, err = runtimetest.HostRun(t, it, h, `
from pathlib import Path
d = Path('/data')
walk = sorted(str(p)[6:] for p in d.rglob('*'))
(walk, (d / 'keep.txt').read_text(), (d / 'log.txt').read_text(), (d / 'new.txt').read_text(),
 (d / 'moved' / 'sub' / 'b.txt').read_text(), (d / 'old.txt').exists(), (d / 'tree').exists(),
 (d / 'gone.txt').exists(), (d / 'new.txt').stat().st_size)
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{
		strList("keep.txt", "log.txt", "made", "made/deep", "made/deep/f.bin", "moved", "moved/a.txt",
			"moved/sub", "moved/sub/b.txt", "moved/sub/c.txt", "new.txt"),
		object.Str("changed"), object.Str("line1\nline2\nline3\n"), object.Str("old"), object.Str("b"),
		object.Bool(false), object.Bool(false), object.Bool(false), object.Int(3),
	}, v)
	b, err := o.ReadFile("/data/moved/sub/c.txt")
	require.NoError(t, err)
	assert.Equal(t, "c", string(b))

	assert.Equal(t, before, hostTree(t, dir), "the host directory is unchanged")
	v, err = runtimetest.HostRun(t, it, &runtime.Host{OS: openOverlay(t, dir, vfs.OverlayOptions{})},
		"from pathlib import Path\nsorted(p.name for p in Path('/data').iterdir())")
	require.NoError(t, err)
	assert.Equal(t, strList("doomed", "empty", "gone.txt", "keep.txt", "log.txt", "old.txt", "tree"), v)
}

func strList(ss ...string) object.List {
	out := object.List{}
	for _, s := range ss {
		out = append(out, object.Str(s))
	}
	return out
}

// TestOverlaySemantics: whiteouts, opaque directories, rename rules.
func TestOverlaySemantics(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"d/a.txt": "a", "d/b.txt": "b", "f.txt": "f", "e/": ""})
	it := runtimetest.NewInterp(t)
	o := openOverlay(t, dir, vfs.OverlayOptions{})
	h := &runtime.Host{OS: o}
	for _, tc := range []struct{ code, want string }{
		// A host directory with visible entries cannot be removed…
		{"Path('/data/d').rmdir()", "OSError: [Errno 39] Directory not empty: '/data/d'"},
		{"Path('/data/f.txt').rmdir()", "NotADirectoryError: [Errno 20] Not a directory: '/data/f.txt'"},
		{"Path('/data/d').unlink()", "IsADirectoryError: [Errno 21] Is a directory: '/data/d'"},
		{"Path('/data/d').rename('/data/d/inner')", "OSError: [Errno 22] Invalid argument: '/data/d'"},
		{"Path('/data/f.txt').rename('/data/e')", "IsADirectoryError: [Errno 21] Is a directory: '/data/f.txt'"},
		{"Path('/data/e').rename('/data/f.txt')", "NotADirectoryError: [Errno 20] Not a directory: '/data/e'"},
		{"Path('/data/e').rename('/data/d')", "OSError: [Errno 39] Directory not empty: '/data/d'"},
		{"Path('/data/f.txt/x').write_text('x')", "FileNotFoundError: [Errno 2] No such file or directory: '/data/f.txt/x'"},
		{"Path('/data/f.txt/x').mkdir(parents=True)", "NotADirectoryError: [Errno 20] Not a directory: '/data/f.txt/x'"},
		{"Path('/data/u.txt').write_text('u')\nPath('/data/u.txt/x').mkdir(parents=True)", "NotADirectoryError: [Errno 20] Not a directory: '/data/u.txt'"},
		{"Path('/data/u.txt/x').write_text('x')", "FileNotFoundError: [Errno 2] No such file or directory: '/data/u.txt/x'"},
		{"Path('/data/d').write_text('x')", "IsADirectoryError: [Errno 21] Is a directory: '/data/d'"},
		{"Path('/data/nope').read_text()", "FileNotFoundError: [Errno 2] No such file or directory: '/data/nope'"},
		{"Path('/data').rmdir()", "PermissionError: [Errno 13] Permission denied: '/data'"},
		{"open('/data/d')", "IsADirectoryError: [Errno 21] Is a directory: '/data/d'"},
	} {
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n"+tc.code)
		assert.Equal(t, tc.want, runtimetest.PyErr(t, err), tc.code)
	}
	v, err := runtimetest.HostRun(t, it, h, `
from pathlib import Path
d = Path('/data/d')
(d / 'a.txt').unlink()
(d / 'b.txt').unlink()
d.rmdir()
gone = d.exists()
d.mkdir()  # a new, empty directory: the host's entries stay hidden
fresh = sorted(p.name for p in d.iterdir())
(d / 'a.txt').write_text('new a')
Path('/data/e').rename('/data/d2')  # onto nothing
(gone, fresh, (d / 'a.txt').read_text(), (d / 'b.txt').exists(), Path('/data/d2').is_dir(), Path('/data/e').exists())
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Bool(false), strList(), object.Str("new a"), object.Bool(false),
		object.Bool(true), object.Bool(false)}, v)
	// A file created and deleted again leaves nothing behind; memory
	// comes back.
	used := o.MemoryUsed()
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\np = Path('/data/tmp.txt')\np.write_text('x' * 1000)\np.unlink()")
	require.NoError(t, err)
	assert.Equal(t, used, o.MemoryUsed())
}

// TestOverlaySymlinks: the overlay never follows a symbolic link, even one
// that stays inside the mount: a path through one is refused, a listing
// shows one as neither file nor directory, is_symlink sees it.
func TestOverlaySymlinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	writeTree(t, dir, map[string]string{"real/f.txt": "f", "tree/x.txt": "x"})
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "inner")))
	require.NoError(t, os.Symlink("f.txt", filepath.Join(dir, "real", "link.txt")))
	require.NoError(t, os.Symlink("../real", filepath.Join(dir, "tree", "back")))
	it := runtimetest.NewInterp(t)
	h := &runtime.Host{OS: openOverlay(t, dir, vfs.OverlayOptions{})}
	denied := func(p string) string { return "PermissionError: [Errno 13] Permission denied: '" + p + "'" }
	for _, tc := range []struct{ code, want string }{
		{"Path('/data/inner/f.txt').read_text()", denied("/data/inner/f.txt")},
		{"Path('/data/real/link.txt').read_text()", denied("/data/real/link.txt")},
		{"Path('/data/real/link.txt').stat()", denied("/data/real/link.txt")},
		{"open('/data/real/link.txt')", denied("/data/real/link.txt")},
		{"Path('/data/real/link.txt').write_text('x')", denied("/data/real/link.txt")},
		{"Path('/data/real/link.txt').append_text('x')", denied("/data/real/link.txt")},
		{"Path('/data/inner/new.txt').write_text('x')", denied("/data/inner/new.txt")},
		{"Path('/data/inner').unlink()", denied("/data/inner")},
		{"Path('/data/inner/sub').mkdir(parents=True)", denied("/data/inner/sub")},
		{"list(Path('/data/inner').iterdir())", denied("/data/inner")},
		{"Path('/data/tree').rename('/data/t2')", denied("/data/tree")},
		{"Path('/data/real/f.txt').rename('/data/inner/g.txt')", denied("/data/inner/g.txt")},
	} {
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n"+tc.code)
		assert.Equal(t, tc.want, runtimetest.PyErr(t, err), tc.code)
	}
	v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
entries = sorted((e.name, e.is_dir(), e.is_file(), e.is_symlink()) for e in os.scandir('/data'))
(entries, Path('/data/inner').is_symlink(), Path('/data/inner').exists(), Path('/data/real/link.txt').is_file(),
 Path('/data/real/f.txt').read_text())
`)
	require.NoError(t, err)
	entry := func(name string, dir, file, link bool) object.Value {
		return object.Tuple{object.Str(name), object.Bool(dir), object.Bool(file), object.Bool(link)}
	}
	assert.Equal(t, object.Tuple{
		object.List{entry("inner", false, false, true), entry("real", true, false, false), entry("tree", true, false, false)},
		object.Bool(true), object.Bool(false), object.Bool(false), object.Str("f"),
	}, v)
}

// TestOverlaySymlinkSwappedIn: a host component replaced by a symlink after
// the overlay captured a reference (a renamed host file) is refused.
func TestOverlaySymlinkSwappedIn(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	writeTree(t, dir, map[string]string{"sub/f.txt": "f"})
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret"), 0o644))
	o := openOverlay(t, dir, vfs.OverlayOptions{})
	ctx := context.Background()
	call := func(name string, args ...string) (object.Value, error) {
		c := &runtime.OSCall{Name: name}
		for _, a := range args {
			c.Args = append(c.Args, object.Path(a))
		}
		return o.HandleOS(ctx, c)
	}
	_, err := call("Path.rename", "/data/sub/f.txt", "/data/g.txt")
	require.NoError(t, err)
	require.NoError(t, os.Rename(filepath.Join(dir, "sub"), filepath.Join(base, "sub-away")))
	require.NoError(t, os.Symlink(base, filepath.Join(dir, "sub")))
	require.NoError(t, os.WriteFile(filepath.Join(base, "f.txt"), []byte("secret"), 0o644))
	for _, p := range []string{"/data/g.txt", "/data/sub/secret.txt"} {
		_, err = call("Path.read_text", p)
		var exc *runtime.Exception
		require.ErrorAs(t, err, &exc, p)
		assert.Equal(t, "PermissionError", exc.Type, p)
	}
	v, err := call("Path.exists", "/data/g.txt")
	require.NoError(t, err)
	assert.Equal(t, object.Bool(false), v)
}

// TestOverlayWriteLimit attacks the write limit: many small files, one
// long append loop, truncating or deleting to get bytes back, renames to
// dodge counting, appends to host files.
func TestOverlayWriteLimit(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"big.txt": strings.Repeat("b", 600)})
	it := runtimetest.NewInterp(t)
	const exceeded = "OSError: disk write limit of 1 KB exceeded"
	fresh := func() (*vfs.OverlayFS, *runtime.Host) {
		o := openOverlay(t, dir, vfs.OverlayOptions{WriteLimit: 1000})
		return o, &runtime.Host{OS: o}
	}

	o, h := fresh()
	v, err := runtimetest.HostRun(t, it, h, `
from pathlib import Path
n = 0
try:
    while True:
        Path(f'/data/f{n}.txt').write_text('0123456789')
        n += 1
except OSError as e:
    err = str(e)
(n, err)
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Int(100), object.Str("disk write limit of 1 KB exceeded")}, v)
	assert.Equal(t, int64(1000), o.WriteBytesUsed())

	o, h = fresh()
	_, err = runtimetest.HostRun(t, it, h, "with open('/data/log', 'a') as f:\n    while True:\n        f.write('x' * 7)")
	assert.Equal(t, exceeded, runtimetest.PyErr(t, err))
	assert.Equal(t, int64(994), o.WriteBytesUsed())

	// Truncating, deleting or renaming gives nothing back; renames cost nothing.
	o, h = fresh()
	_, err = runtimetest.HostRun(t, it, h, `
from pathlib import Path
p = Path('/data/a')
p.write_text('x' * 900)
for i in range(50):
    p.rename('/data/b')
    Path('/data/b').rename(p)
p.write_text('')
p.unlink()
Path('/data/c').write_text('y' * 101)
`)
	assert.Equal(t, exceeded, runtimetest.PyErr(t, err))
	assert.Equal(t, int64(900), o.WriteBytesUsed())

	// Appending to a host file copies it into memory: its size counts. A
	// rename first does not dodge that.
	o, h = fresh()
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/data/big.txt').rename('/data/moved.txt')\nPath('/data/moved.txt').append_text('x')")
	require.NoError(t, err)
	assert.Equal(t, int64(601), o.WriteBytesUsed())
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/data/big.txt').exists() or Path('/data/x').write_text('x' * 400)")
	assert.Equal(t, exceeded, runtimetest.PyErr(t, err))

	// Go callers can tell the limit apart.
	_, err = o.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.write_text",
		Args: []object.Value{object.Path("/data/y"), object.Str(strings.Repeat("y", 1000))}})
	require.ErrorIs(t, err, vfs.ErrMountWriteLimit)
	var exc *runtime.Exception
	require.ErrorAs(t, err, &exc)
	assert.Equal(t, "OSError", exc.Type)
}

// TestOverlayMemoryLimit attacks the memory budget: many empty files,
// deletions (whiteouts cost memory too), one huge write, reading a host
// file larger than the budget, renaming a large host tree.
func TestOverlayMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"huge.txt": strings.Repeat("h", 20_000)}
	for i := range 100 {
		files[fmt.Sprintf("tree/f%03d.txt", i)] = "t"
	}
	writeTree(t, dir, files)
	before := hostTree(t, dir)
	it := runtimetest.NewInterp(t)
	const exceeded = "MemoryError: mount memory usage limit of 10 KB exceeded"
	o := openOverlay(t, dir, vfs.OverlayOptions{MemoryLimit: 10_000})
	h := &runtime.Host{OS: o}

	v, err := runtimetest.HostRun(t, it, h, `
from pathlib import Path
n = 0
try:
    while True:
        Path(f'/data/e{n}').write_text('')
        n += 1
except MemoryError as e:
    err = str(e)
(n, err)
`)
	require.NoError(t, err)
	// 256 bytes and the name each: 10 of 258, 28 of 259.
	assert.Equal(t, object.Tuple{object.Int(38), object.Str("mount memory usage limit of 10 KB exceeded")}, v)
	assert.Equal(t, int64(10*258+28*259), o.MemoryUsed())
	// Deleting what the code made gives the memory back.
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nfor p in Path('/data').glob('e*'):\n    p.unlink()")
	require.NoError(t, err)
	assert.Equal(t, int64(0), o.MemoryUsed())

	for _, code := range []string{
		"Path('/data/x').write_bytes(b'x' * 10_001)",
		"Path('/data/huge.txt').read_text()",
		"Path('/data/huge.txt').append_text('x')",
		"Path('/data/tree').rename('/data/t2')", // 100 references do not fit
		"for i in range(100):\n    Path(f'/data/tree/f{i:03}.txt').unlink()",
	} {
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n"+code)
		assert.Equal(t, exceeded, runtimetest.PyErr(t, err), code)
	}
	// The refused rename changed nothing; the whiteouts made before the
	// budget ran out hide their files.
	v, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\n(Path('/data/tree').is_dir(), Path('/data/t2').exists(), Path('/data/tree/f000.txt').exists(), len(list(Path('/data/tree').iterdir())))")
	require.NoError(t, err)
	n := 100 - int(o.MemoryUsed())/(256+len("tree/f000.txt"))
	assert.Equal(t, object.Tuple{object.Bool(true), object.Bool(false), object.Bool(false), object.Int(n)}, v)
	_, err = o.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.read_bytes", Args: []object.Value{object.Path("/data/huge.txt")}})
	require.ErrorIs(t, err, vfs.ErrMountMemoryLimit)
	assert.Equal(t, before, hostTree(t, dir))
}
