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

// escapeTree builds base/{secret.txt, data/...} where data holds files and
// symlinks that try to leave it, and returns base.
func escapeTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	writeTree(t, base, map[string]string{"secret.txt": "secret", "data/in.txt": "inside", "data/sub/f.txt": "f"})
	data := filepath.Join(base, "data")
	for link, target := range map[string]string{
		"link_out":     "../secret.txt",                   // relative, leaves the mount
		"abs_out":      filepath.Join(base, "secret.txt"), // absolute
		"up":           "..",                              // the mount's parent
		"dangling":     "missing",                         // inside, dangling
		"dangling_out": "../created_outside.txt",          // dangling, outside
		"in_link":      "in.txt",                          // inside
		"sub/loop":     ".",                               // a cycle
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(data, link)))
	}
	return base
}

// openMode opens base/data at /data as the mode names: ro, rw or overlay.
func openMode(t *testing.T, mode, dir string) vfs.MountHandler {
	t.Helper()
	m, err := vfs.ParseMount(dir + ":/data:" + mode)
	require.NoError(t, err)
	h, err := m.Open()
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

var mountModes = []string{"ro", "rw", "overlay"}

// TestMountConfinement: in every mode, no path — "..", absolute, through a
// symlink that leads out (relative, absolute, to the parent, dangling) —
// reads or changes anything outside the mounted directory.
func TestMountConfinement(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for _, mode := range mountModes {
		base := escapeTree(t)
		outside := hostTree(t, base)
		delete(outside, "data") // the directory's own mtime may change in rw
		for k := range outside {
			if strings.HasPrefix(k, "data"+string(filepath.Separator)) {
				delete(outside, k)
			}
		}
		h := &runtime.Host{OS: openMode(t, mode, filepath.Join(base, "data"))}
		v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
def attempt(f):
    try:
        return repr(f())
    except Exception as e:
        return type(e).__name__
reads = {}
for p in ['/data/../secret.txt', '/data/link_out', '/data/abs_out', '/data/up/secret.txt', '/data/dangling',
          '/data/sub/../../secret.txt', '/data/up/data/in.txt', '/secret.txt', '/etc/passwd']:
    reads[p] = attempt(lambda: Path(p).read_text())
for p in ['/data/up/secret.txt', '/data/link_out', '/data/up']:
    reads['stat ' + p] = attempt(lambda: Path(p).stat().st_size)
    reads['exists ' + p] = attempt(lambda: Path(p).exists())
    reads['list ' + p] = attempt(lambda: os.listdir(p))
writes = {}
for p in ['/data/link_out', '/data/abs_out', '/data/up/evil.txt', '/data/dangling_out', '/data/../evil.txt']:
    writes[p] = attempt(lambda: Path(p).write_text('pwned'))
    writes['append ' + p] = attempt(lambda: Path(p).append_text('pwned'))
    writes['open ' + p] = attempt(lambda: open(p, 'w'))
writes['mkdir'] = attempt(lambda: Path('/data/up/evil_dir').mkdir())
writes['mkdirs'] = attempt(lambda: Path('/data/up/a/b').mkdir(parents=True))
writes['unlink'] = attempt(lambda: Path('/data/up/secret.txt').unlink())
writes['rmdir'] = attempt(lambda: Path('/data/up/data').rmdir())
writes['rename out'] = attempt(lambda: Path('/data/sub/f.txt').rename('/data/up/stolen.txt'))
writes['rename in'] = attempt(lambda: Path('/data/up/secret.txt').rename('/data/stolen.txt'))
writes['replace'] = attempt(lambda: os.replace('/data/sub/f.txt', '/data/../stolen.txt'))
names = sorted(os.listdir('/data'))
(reads, writes, names)
`)
		require.NoError(t, err, mode)
		res := v.(object.Tuple)
		for _, d := range res[:2] {
			for _, kv := range d.(object.Dict) {
				got := string(kv.Value.(object.Str))
				assert.NotContains(t, got, "secret", "%s %s", mode, kv.Key)
				assert.NotContains(t, got, "'inside'", "%s %s", mode, kv.Key)
				key := string(kv.Key.(object.Str))
				if strings.HasPrefix(key, "exists ") {
					assert.Equal(t, "False", got, "%s %s", mode, key)
				} else {
					assert.Contains(t, []string{"PermissionError", "FileNotFoundError", "OSError", "NotADirectoryError"}, got, "%s %s", mode, key)
				}
			}
		}
		// Links that dangle or leave the mount are not even listed.
		names := res[2].(object.List)
		for _, hidden := range []string{"link_out", "abs_out", "up", "dangling", "dangling_out"} {
			assert.NotContains(t, names, object.Str(hidden), mode)
		}
		assert.Contains(t, names, object.Str("in_link"), mode)

		after := hostTree(t, base)
		for k, v := range outside {
			assert.Equal(t, v, after[k], "%s: %s outside the mount changed", mode, k)
		}
		for k := range after {
			if !strings.HasPrefix(k, "data") {
				assert.Contains(t, outside, k, "%s: %s appeared outside the mount", mode, k)
			}
		}
	}
}

// TestMountReadOnlyAndOverlayLeaveHostAlone: every kind of write on a
// read-only mount raises "[Errno 30] Read-only file system"; the same
// writes on an overlay succeed; neither changes the host directory.
func TestMountReadOnlyAndOverlayLeaveHostAlone(t *testing.T) {
	it := runtimetest.NewInterp(t)
	writes := []string{
		"Path('/data/in.txt').write_text('x')",
		"Path('/data/new.bin').write_bytes(b'x')",
		"Path('/data/in.txt').append_text('x')",
		"Path('/data/newdir').mkdir()",
		"Path('/data/a/b').mkdir(parents=True)",
		"Path('/data/sub/f.txt').rename('/data/g.txt')",
		"Path('/data/g.txt' if Path('/data/g.txt').exists() else '/data/sub/f.txt').unlink()",
		"open('/data/in.txt', 'w')",
		"open('/data/in.txt', 'a')",
		"import os\nos.remove('/data/in_link')",
		"Path('/data/sub/loop').unlink()\nPath('/data/sub').rmdir()",
	}
	for _, mode := range []string{"ro", "overlay"} {
		base := escapeTree(t)
		before := hostTree(t, base)
		h := &runtime.Host{OS: openMode(t, mode, filepath.Join(base, "data"))}
		for _, code := range writes {
			_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n"+code)
			if mode == "ro" {
				msg := runtimetest.PyErr(t, err)
				assert.True(t, strings.HasPrefix(msg, "PermissionError: [Errno 30] Read-only file system: '/data/"), "%s: %s", code, msg)
				continue
			}
			if strings.Contains(code, "loop") || strings.Contains(code, "in_link") {
				// The overlay refuses to touch symlinks at all.
				assert.Equal(t, "PermissionError", runtimetest.PyErrType(t, err), code)
				continue
			}
			require.NoError(t, err, code)
		}
		assert.Equal(t, before, hostTree(t, base), mode)
	}
}

// TestMountSymlinkSwappedIn: a directory replaced by a symlink to the
// outside after the mount was opened leads nowhere; the mount's root
// replaced by one changes nothing, since the mount holds the directory
// itself, not its name.
func TestMountSymlinkSwappedIn(t *testing.T) {
	ctx := context.Background()
	for _, mode := range mountModes {
		base := escapeTree(t)
		data := filepath.Join(base, "data")
		h := openMode(t, mode, data)
		read := func(p string) (object.Value, error) {
			return h.HandleOS(ctx, &runtime.OSCall{Name: "Path.read_text", Args: []object.Value{object.Path(p)}})
		}
		v, err := read("/data/sub/f.txt")
		require.NoError(t, err, mode)
		assert.Equal(t, object.Str("f"), v)

		require.NoError(t, os.Rename(filepath.Join(data, "sub"), filepath.Join(base, "sub-away")))
		require.NoError(t, os.Symlink(base, filepath.Join(data, "sub")))
		_, err = read("/data/sub/secret.txt")
		var exc *runtime.Exception
		require.ErrorAs(t, err, &exc, mode)
		assert.Equal(t, "PermissionError", exc.Type, mode)

		require.NoError(t, os.Rename(data, filepath.Join(base, "data-away")))
		require.NoError(t, os.Symlink(base, data))
		v, err = read("/data/in.txt")
		require.NoError(t, err, mode)
		assert.Equal(t, object.Str("inside"), v, mode)
		_, err = read("/data/secret.txt")
		require.ErrorAs(t, err, &exc, mode)
		assert.Equal(t, "FileNotFoundError", exc.Type, mode)
	}
}

// TestMountNULBytes: the interpreter refuses a path with a NUL byte before
// asking the host; the mounts refuse one too (for direct callers), with
// CPython's ValueError, and their predicates answer False.
func TestMountNULBytes(t *testing.T) {
	it := runtimetest.NewInterp(t)
	ctx := context.Background()
	for _, mode := range mountModes {
		h := openMode(t, mode, filepath.Join(escapeTree(t), "data"))
		_, err := runtimetest.HostRun(t, it, &runtime.Host{OS: h}, "from pathlib import Path\nPath('/data/in.txt\\x00x').read_text()")
		assert.Equal(t, "ValueError: embedded null byte", runtimetest.PyErr(t, err), mode)
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"Path.read_text", []string{"/data/in.txt\x00x"}, "embedded null byte"},
			{"Path.write_text", []string{"/data/in\x00.txt", "x"}, "embedded null byte"},
			{"Path.mkdir", []string{"/data/d\x00"}, "mkdir: embedded null character in path"},
			{"Path.stat", []string{"/data/\x00"}, "stat: embedded null character in path"},
			{"Path.rename", []string{"/data/in.txt", "/data/x\x00"}, "rename: embedded null character in dst"},
			{"Path.rename", []string{"/data/i\x00n.txt", "/data/x"}, "rename: embedded null character in src"},
		} {
			call := &runtime.OSCall{Name: tc.name}
			for _, a := range tc.args {
				call.Args = append(call.Args, object.Str(a))
			}
			_, err := h.HandleOS(ctx, call)
			var exc *runtime.Exception
			require.ErrorAs(t, err, &exc, "%s %s", mode, tc.name)
			assert.Equal(t, runtime.Exception{Type: "ValueError", Message: tc.want}, *exc, "%s %s", mode, tc.name)
		}
		v, err := h.HandleOS(ctx, &runtime.OSCall{Name: "Path.exists", Args: []object.Value{object.Str("/data/in.txt\x00")}})
		require.NoError(t, err)
		assert.Equal(t, object.Bool(false), v, mode)
	}
}

// TestDirFSWriteLimit attacks a read-write DirFS's write limit as
// TestOverlayWriteLimit does an overlay's, and checks its read limit.
func TestDirFSWriteLimit(t *testing.T) {
	it := runtimetest.NewInterp(t)
	fresh := func() (*vfs.DirFS, *runtime.Host) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"big.txt": strings.Repeat("b", 2000)})
		d, err := vfs.OpenDirFS(dir, "/data", vfs.DirFSOptions{ReadWrite: true, WriteLimit: 1500, MemoryLimit: 1999})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d, &runtime.Host{OS: d}
	}
	const exceeded = "OSError: disk write limit of 1.5 KB exceeded"

	d, h := fresh()
	v, err := runtimetest.HostRun(t, it, h, `
from pathlib import Path
n = 0
try:
    while True:
        Path(f'/data/f{n}.txt').write_text('0123456789')
        n += 1
except OSError as e:
    err = str(e)
(n, err, Path('/data/f150.txt').exists())
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Int(150), object.Str("disk write limit of 1.5 KB exceeded"), object.Bool(false)}, v)
	assert.Equal(t, int64(1500), d.WriteBytesUsed())

	d, h = fresh()
	_, err = runtimetest.HostRun(t, it, h, "with open('/data/log', 'a') as f:\n    while True:\n        f.write('x' * 7)")
	assert.Equal(t, exceeded, runtimetest.PyErr(t, err))
	assert.Equal(t, int64(1498), d.WriteBytesUsed())

	// Failed writes cost nothing; truncating, deleting and renaming give
	// nothing back; appending to a host file counts only what is appended.
	d, h = fresh()
	_, err = runtimetest.HostRun(t, it, h, `
from pathlib import Path
for bad in ['/data/missing/x', '/data']:
    try:
        Path(bad).write_text('x' * 1000)
    except OSError:
        pass
p = Path('/data/a')
p.write_text('x' * 1000)
for i in range(20):
    p.rename('/data/b')
    Path('/data/b').rename(p)
p.write_text('')
p.unlink()
Path('/data/big.txt').append_text('x' * 400)
Path('/data/c').write_text('y' * 101)
`)
	assert.Equal(t, exceeded, runtimetest.PyErr(t, err))
	assert.Equal(t, int64(1400), d.WriteBytesUsed())
	_, err = d.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.append_bytes",
		Args: []object.Value{object.Path("/data/y"), object.Bytes(strings.Repeat("y", 101))}})
	require.ErrorIs(t, err, vfs.ErrMountWriteLimit)

	// A file larger than the memory limit is not read.
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/data/big.txt').read_bytes()")
	assert.Equal(t, "MemoryError: mount memory usage limit of 2 KB exceeded", runtimetest.PyErr(t, err))
}
