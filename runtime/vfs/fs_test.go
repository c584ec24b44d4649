package vfs_test

import (
	"context"
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

// mounts returns a fresh MemFS, a fresh read-write DirFS and a fresh
// OverlayFS, all at /mnt, seeded with hello.txt, bad.bin (not UTF-8),
// sub/a.txt and sub/deep/b.txt.
func mounts(t *testing.T) map[string]runtime.OSHandler {
	t.Helper()
	files := map[string]string{
		"hello.txt":      "hello",
		"bad.bin":        "ok\x80\x81",
		"sub/a.txt":      "a",
		"sub/deep/b.txt": "b",
	}
	mem := vfs.NewMemFS("/mnt")
	dir, lower := t.TempDir(), t.TempDir()
	for name, data := range files {
		require.NoError(t, mem.WriteFile("/mnt/"+name, []byte(data)))
		for _, d := range []string{dir, lower} {
			require.NoError(t, os.MkdirAll(filepath.Join(d, filepath.Dir(name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(d, name), []byte(data), 0o644))
		}
	}
	d, err := vfs.OpenDirFS(dir, "/mnt", vfs.DirFSOptions{ReadWrite: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	o, err := vfs.OpenOverlayFS(lower, "/mnt", vfs.OverlayOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close() })
	return map[string]runtime.OSHandler{"MemFS": mem, "DirFS": d, "OverlayFS": o}
}

func TestMountMkdirParentsExisting(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for kind, fs := range mounts(t) {
		h := &runtime.Host{OS: fs}
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/sub').mkdir(parents=True)")
		assert.Equal(t, "FileExistsError: [Errno 17] File exists: '/mnt/sub'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "import os\nos.makedirs('/mnt/sub')")
		assert.Equal(t, "FileExistsError: [Errno 17] File exists: '/mnt/sub'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/hello.txt').mkdir(parents=True, exist_ok=True)")
		assert.Equal(t, "FileExistsError: [Errno 17] File exists: '/mnt/hello.txt'", runtimetest.PyErr(t, err), kind)
		v, err := runtimetest.HostRun(t, it, h, `
from pathlib import Path
import os
Path('/mnt/sub').mkdir(parents=True, exist_ok=True)
os.makedirs('/mnt/sub', exist_ok=True)
Path('/mnt/x/y/z').mkdir(parents=True)
Path('/mnt/x/y/z').is_dir()
`)
		require.NoError(t, err, kind)
		assert.Equal(t, object.Bool(true), v, kind)
	}
}

func TestMountRename(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for kind, fs := range mounts(t) {
		h := &runtime.Host{OS: fs}
		v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
r = os.rename('/mnt/hello.txt', '/mnt/moved.txt')
p = Path('/mnt/moved.txt').rename('/mnt/hello.txt')
q = os.replace('/mnt/hello.txt', '/mnt/hello2.txt')
(r, p, q, Path('/mnt/hello2.txt').read_text(), Path('/mnt/hello.txt').exists())
`)
		require.NoError(t, err, kind)
		assert.Equal(t, object.Tuple{object.None{}, object.Path("/mnt/hello.txt"), object.None{},
			object.Str("hello"), object.Bool(false)}, v, kind)

		// A directory replaces an empty directory; a non-empty one refuses,
		// naming the destination.
		v, err = runtimetest.HostRun(t, it, h, `
from pathlib import Path
Path('/mnt/empty').mkdir()
Path('/mnt/sub').rename('/mnt/empty')
(Path('/mnt/empty/deep/b.txt').read_text(), Path('/mnt/sub').exists())
`)
		require.NoError(t, err, kind)
		assert.Equal(t, object.Tuple{object.Str("b"), object.Bool(false)}, v, kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/full').mkdir()\nPath('/mnt/full/f').write_text('x')\nPath('/mnt/empty').rename('/mnt/full')")
		assert.Equal(t, "OSError: [Errno 39] Directory not empty: '/mnt/full'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/hello2.txt').rename('/mnt/full')")
		assert.Equal(t, "IsADirectoryError: [Errno 21] Is a directory: '/mnt/hello2.txt'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/nope').rename('/mnt/x')")
		assert.Equal(t, "FileNotFoundError: [Errno 2] No such file or directory: '/mnt/nope'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/hello2.txt').rename('/elsewhere/x')")
		assert.Equal(t, "OSError: [Errno 18] Invalid cross-device link: '/mnt/hello2.txt' -> '/elsewhere/x'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt').rename('/mnt/x')")
		assert.Equal(t, "PermissionError: [Errno 13] Permission denied: '/mnt'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt').rmdir()")
		assert.Equal(t, "PermissionError: [Errno 13] Permission denied: '/mnt'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/empty').rename('/mnt/empty/inner')")
		assert.Equal(t, "OSError", runtimetest.PyErrType(t, err), kind)
	}
}

func TestMountReadTextNotUTF8(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for kind, fs := range mounts(t) {
		h := &runtime.Host{OS: fs}
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/mnt/bad.bin').read_text()")
		assert.Equal(t, "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 2: invalid start byte", runtimetest.PyErr(t, err), kind)
		v, err := runtimetest.HostRun(t, it, h, `
from pathlib import Path
p = Path('/mnt/t.bin')
out = []
for data in [b'\xe2\x28', b'ab\xe2\x82', b'\xf0\x90\x28', b'\xed\xa0\x80']:
    p.write_bytes(data)
    try:
        p.read_text()
    except UnicodeDecodeError as e:
        out.append(str(e))
out
`)
		require.NoError(t, err, kind)
		assert.Equal(t, object.List{
			object.Str("'utf-8' codec can't decode byte 0xe2 in position 0: invalid continuation byte"),
			object.Str("'utf-8' codec can't decode bytes in position 2-3: unexpected end of data"),
			object.Str("'utf-8' codec can't decode bytes in position 0-1: invalid continuation byte"),
			object.Str("'utf-8' codec can't decode byte 0xed in position 0: invalid continuation byte"),
		}, v, kind)
	}
}

func TestMountNameTooLong(t *testing.T) {
	it := runtimetest.NewInterp(t)
	long := "/mnt/" + strings.Repeat("a", 256)
	deep := "/mnt/" + strings.Repeat("d/", 70) + "f"
	for kind, fs := range mounts(t) {
		h := &runtime.Host{OS: fs}
		for _, code := range []string{
			"Path('" + long + "').write_text('x')",
			"Path('" + long + "').read_text()",
			"Path('" + long + "').stat()",
			"Path('" + long + "').mkdir()",
			"Path('" + deep + "').read_text()",
			"Path('/mnt/hello.txt').rename('" + long + "')",
		} {
			_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n"+code)
			msg := runtimetest.PyErr(t, err)
			assert.True(t, strings.HasPrefix(msg, "OSError: [Errno 36] File name too long: '/mnt/"), "%s %s: %s", kind, code, msg)
			assert.Contains(t, msg, "…", kind)
		}
		v, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n(Path('"+long+"').exists(), Path('/mnt/"+strings.Repeat("b", 255)+"').exists())")
		require.NoError(t, err, kind)
		assert.Equal(t, object.Tuple{object.Bool(false), object.Bool(false)}, v, kind)
	}
}

func TestMountScan(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for kind, fs := range mounts(t) {
		h := &runtime.Host{OS: fs}
		v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
root = Path('/mnt')
n = len('/mnt')
scan = sorted((e.name, e.is_dir(), e.is_file()) for e in os.scandir(root))
walk = [(d[n:], sorted(dn), sorted(fn)) for d, dn, fn in os.walk(root)]
glob = sorted(str(p)[n:] for p in root.glob('**/*.txt'))
rglob = sorted(str(p)[n:] for p in root.rglob('b.txt'))
one = sorted(str(p)[n:] for p in root.glob('*/*'))
(scan, walk, glob, rglob, one)
`)
		require.NoError(t, err, kind)
		entry := func(name string, dir bool) object.Value {
			return object.Tuple{object.Str(name), object.Bool(dir), object.Bool(!dir)}
		}
		strs := func(ss ...string) object.List {
			out := object.List{}
			for _, s := range ss {
				out = append(out, object.Str(s))
			}
			return out
		}
		assert.Equal(t, object.Tuple{
			object.List{entry("bad.bin", false), entry("hello.txt", false), entry("sub", true)},
			object.List{
				object.Tuple{object.Str(""), strs("sub"), strs("bad.bin", "hello.txt")},
				object.Tuple{object.Str("/sub"), strs("deep"), strs("a.txt")},
				object.Tuple{object.Str("/sub/deep"), strs(), strs("b.txt")},
			},
			strs("/hello.txt", "/sub/a.txt", "/sub/deep/b.txt"),
			strs("/sub/deep/b.txt"),
			strs("/sub/a.txt", "/sub/deep"),
		}, v, kind)

		_, err = runtimetest.HostRun(t, it, h, "import os\nos.scandir('/mnt/nope')")
		assert.Equal(t, "FileNotFoundError: [Errno 2] No such file or directory: '/mnt/nope'", runtimetest.PyErr(t, err), kind)
		_, err = runtimetest.HostRun(t, it, h, "import os\nos.scandir('/mnt/hello.txt')")
		assert.Equal(t, "NotADirectoryError: [Errno 20] Not a directory: '/mnt/hello.txt'", runtimetest.PyErr(t, err), kind)
	}
}

// TestMountScanOutsideAndReadOnly: a scan outside the mount is denied, and a
// scan is a read, allowed on a read-only mount.
func TestMountScanOutsideAndReadOnly(t *testing.T) {
	it := runtimetest.NewInterp(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), nil, 0o644))
	ro, err := vfs.OpenDirFS(dir, "/data", vfs.DirFSOptions{})
	require.NoError(t, err)
	defer ro.Close()
	h := &runtime.Host{OS: ro}
	v, err := runtimetest.HostRun(t, it, h, "import os\n[e.name for e in os.scandir('/data')]")
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Str("f.txt")}, v)
	_, err = runtimetest.HostRun(t, it, h, "import os\nos.scandir('/')")
	assert.Equal(t, "PermissionError", runtimetest.PyErrType(t, err))
	_, err = runtimetest.HostRun(t, it, h, "import os\nos.scandir('/data/../..')")
	assert.Equal(t, "PermissionError", runtimetest.PyErrType(t, err))
}

// TestDirFSScanSymlinks: links inside the mount are listed by their target;
// links that leave the mount or dangle are not listed, and a scan never
// descends through one outside the mount.
func TestDirFSScanSymlinks(t *testing.T) {
	it := runtimetest.NewInterp(t)
	base := t.TempDir()
	data := filepath.Join(base, "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "real"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "real", "f.txt"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink("real", filepath.Join(data, "inner")))
	require.NoError(t, os.Symlink(base, filepath.Join(data, "up")))
	require.NoError(t, os.Symlink("missing", filepath.Join(data, "dangling")))
	require.NoError(t, os.Symlink(".", filepath.Join(data, "real", "loop")))
	d, err := vfs.OpenDirFS(data, "/data", vfs.DirFSOptions{})
	require.NoError(t, err)
	defer d.Close()
	h := &runtime.Host{OS: d}
	v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
entries = sorted((e.name, e.is_dir(), e.is_symlink()) for e in os.scandir('/data'))
walked = [d for d, _, _ in os.walk('/data', followlinks=True)]
found = sorted(str(p) for p in Path('/data').rglob('*.txt'))
(entries, len(walked) < 200, '/data/up' in walked, found)
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{
		object.List{
			object.Tuple{object.Str("inner"), object.Bool(true), object.Bool(true)},
			object.Tuple{object.Str("real"), object.Bool(true), object.Bool(false)},
		},
		object.Bool(true), object.Bool(false),
		object.List{object.Str("/data/real/f.txt")},
	}, v)
}

// TestMountScanAnswer checks the answer's shape directly: the tree reply
// monty parses, root included as "", honouring max_depth.
func TestMountScanAnswer(t *testing.T) {
	for kind, fs := range mounts(t) {
		call := &runtime.OSCall{Name: "Path.scan", Args: []object.Value{object.Path("/mnt/sub")},
			Kwargs: []object.Pair{{Key: object.Str("max_depth"), Value: object.Int(1)}, {Key: object.Str("follow_symlinks"), Value: object.Bool(false)}}}
		v, err := fs.HandleOS(context.Background(), call)
		require.NoError(t, err, kind)
		tuple := func(p string, dir bool) object.Value {
			return object.Tuple{object.Str(p), object.Bool(dir), object.Bool(!dir), object.Bool(false)}
		}
		assert.Equal(t, object.List{tuple("", true), tuple("a.txt", false), tuple("deep", true)}, v, kind)
		call.Kwargs[0].Value = object.None{}
		v, err = fs.HandleOS(context.Background(), call)
		require.NoError(t, err, kind)
		assert.Equal(t, object.List{tuple("", true), tuple("a.txt", false), tuple("deep", true), tuple("deep/b.txt", false)}, v, kind)
		call.Args[0] = object.Path("/mnt/hello.txt")
		v, err = fs.HandleOS(context.Background(), call)
		require.NoError(t, err, kind)
		assert.Equal(t, object.List{tuple("", false)}, v, kind)
	}
}
