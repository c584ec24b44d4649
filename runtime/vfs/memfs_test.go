package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
	"github.com/monty-go/monty/runtime/vfs"
)

// TestMemFSLimitsAgainstCode runs code written to get past the limits: an
// append loop, many empty files, many directories, renames to longer names
// and makedirs of a long chain. Each stops with CPython's full-disk
// OSError, the usage stays within the limits, and removing files makes
// room again.
func TestMemFSLimitsAgainstCode(t *testing.T) {
	it := runtimetest.NewInterp(t)
	it.SetLimits(runtime.Limits{MaxHostCalls: runtime.Unlimited})
	const maxBytes, maxEntries = 4096, 20
	cases := []struct{ name, code, path string }{
		{"append loop", "f = open('/work/log.txt', 'a')\nwhile True:\n    f.write('x' * 100)", "/work/log.txt"},
		{"one big write", "from pathlib import Path\nPath('/work/big.bin').write_bytes(b'x' * 5000)", "/work/big.bin"},
		{"empty files", "i = 0\nwhile True:\n    open(f'/work/f{i}', 'w').close()\n    i += 1", "/work/f20"},
		{"directories", "import os\ni = 0\nwhile True:\n    os.mkdir(f'/work/d{i}')\n    i += 1", "/work/d20"},
		{"makedirs chain", "import os\nos.makedirs('/work/' + '/'.join(['abcdefghij'] * 30))", ""},
		{"renames", "import os\nopen('/work/a', 'w').write('x' * 4000)\nname = '/work/a'\nwhile True:\n    os.rename(name, name + 'a')\n    name += 'a'", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMemFS("/work")
			mem.SetLimits(vfs.MemFSLimits{MaxBytes: maxBytes, MaxEntries: maxEntries})
			_, err := runtimetest.HostRun(t, it, &runtime.Host{OS: mem}, c.code)
			var pe *runtime.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "OSError", pe.Type, pe.Message)
			assert.True(t, strings.HasPrefix(pe.Message, "[Errno 28] No space left on device: '"+c.path), pe.Message)
			assert.Contains(t, pe.Message, "/work holds at most 4 KiB of contents and paths and 20 files and directories")
			used, entries := mem.Usage()
			assert.LessOrEqual(t, used, int64(maxBytes))
			assert.LessOrEqual(t, entries, maxEntries)
			var sum int64
			for _, f := range mem.Snapshot() {
				sum += int64(len(f.Path) + len(f.Data))
			}
			assert.Equal(t, sum, used, "usage is what the tree holds")
		})
	}

	// Removing files makes room; a rename over a file frees the replaced one.
	mem := vfs.NewMemFS("/work")
	mem.SetLimits(vfs.MemFSLimits{MaxBytes: 100})
	h := &runtime.Host{OS: mem}
	_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/work/a').write_text('x' * 98)\nPath('/work/b').write_text('y')")
	require.Error(t, err)
	v, err := runtimetest.HostRun(t, it, h, `
import os
from pathlib import Path
os.remove('/work/a')
Path('/work/b').write_text('y' * 40)
Path('/work/c').write_text('z' * 40)
os.replace('/work/c', '/work/b')
Path('/work/d').write_text('w' * 40)
sorted(p.name for p in Path('/work').iterdir())`)
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Str("b"), object.Str("d")}, v)
	used, entries := mem.Usage()
	assert.Equal(t, int64(82), used)
	assert.Equal(t, 2, entries)

	// Seeding from Go is held to the same limits.
	err = mem.WriteFile("/work/e", make([]byte, 50))
	require.ErrorIs(t, err, vfs.ErrNoSpace)
}

// TestMemFSSnapshotRestore: a snapshot restores into another MemFS as it
// was, its data is not changed by later writes, and the generation moves
// with every change.
func TestMemFSSnapshotRestore(t *testing.T) {
	it := runtimetest.NewInterp(t)
	mem := vfs.NewMemFS("/work")
	g0 := mem.Generation()
	_, err := runtimetest.HostRun(t, it, &runtime.Host{OS: mem}, `
import os
os.makedirs('/work/out/empty')
with open('/work/out/data.csv', 'w') as f:
    f.write('a,b\n1,2\n')
open('/work/top.bin', 'wb').write(b'\x00\xff' * 128)`)
	require.NoError(t, err)
	assert.NotEqual(t, g0, mem.Generation())
	snap := mem.Snapshot()
	var paths []string
	for _, f := range snap {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"out", "out/data.csv", "out/empty", "top.bin"}, paths)
	assert.Equal(t, "a,b\n1,2\n", string(snap[1].Data))

	g1 := mem.Generation()
	_, err = runtimetest.HostRun(t, it, &runtime.Host{OS: mem}, "open('/work/out/data.csv', 'a').write('3,4\\n')")
	require.NoError(t, err)
	assert.NotEqual(t, g1, mem.Generation())
	assert.Equal(t, "a,b\n1,2\n", string(snap[1].Data), "a snapshot does not change with later appends")

	other := vfs.NewMemFS("/work")
	require.NoError(t, other.Restore(snap))
	assert.Equal(t, snap, other.Snapshot())
	b, err := other.ReadFile("/work/out/data.csv")
	require.NoError(t, err)
	assert.Equal(t, "a,b\n1,2\n", string(b))
	used, entries := other.Usage()
	assert.Equal(t, 4, entries)
	assert.Equal(t, int64(len("out")+len("out/data.csv")+8+len("out/empty")+len("top.bin")+256), used)

	// Restoring nothing empties it.
	require.NoError(t, other.Restore(nil))
	assert.Empty(t, other.Snapshot())
	used, entries = other.Usage()
	assert.Zero(t, used)
	assert.Zero(t, entries)
}

// TestMemFSRestoreRefuses: trees that Snapshot cannot produce are refused
// with fs.ErrInvalid, trees past the limits with ErrNoSpace, and a refused
// Restore changes nothing.
func TestMemFSRestoreRefuses(t *testing.T) {
	now := time.Now()
	file := func(p, data string) vfs.MemFile {
		return vfs.MemFile{Path: p, Data: []byte(data), ModTime: now}
	}
	dir := func(p string) vfs.MemFile { return vfs.MemFile{Path: p, Dir: true, ModTime: now} }
	invalid := map[string][]vfs.MemFile{
		"dot-dot":          {file("../etc/passwd", "x")},
		"inner dot-dot":    {dir("a"), file("a/../../x", "x")},
		"absolute":         {file("/etc/passwd", "x")},
		"dot":              {file(".", "x")},
		"empty":            {file("", "x")},
		"empty element":    {dir("a"), file("a//b", "x")},
		"trailing slash":   {dir("a/")},
		"NUL":              {file("a\x00b", "x")},
		"not UTF-8":        {file("a\xffb", "x")},
		"duplicate":        {file("a", "x"), file("a", "y")},
		"out of order":     {file("b", "x"), file("a", "y")},
		"missing parent":   {file("a/b", "x")},
		"file under file":  {file("a", "x"), file("a/b", "y")},
		"dir with data":    {{Path: "a", Dir: true, Data: []byte("x")}},
		"name too long":    {file(strings.Repeat("n", 256), "x")},
		"path too long":    {file(strings.Repeat("n/", 2100)+"x", "x")},
		"parent after":     {file("a/b", "x"), dir("a")},
		"dot element":      {dir("a"), file("a/./b", "x")},
		"backslash parent": {file("..\\x", "x"), file("a/../b", "y")},
	}
	mem := vfs.NewMemFS("/work")
	require.NoError(t, mem.WriteFile("/work/keep.txt", []byte("kept")))
	want := mem.Snapshot()
	for name, files := range invalid {
		err := mem.Restore(files)
		require.ErrorIs(t, err, fs.ErrInvalid, name)
		assert.False(t, errors.Is(err, vfs.ErrNoSpace), name)
		assert.Equal(t, want, mem.Snapshot(), name)
	}

	mem.SetLimits(vfs.MemFSLimits{MaxBytes: 10, MaxEntries: 2})
	for name, files := range map[string][]vfs.MemFile{
		"bytes":   {file("a", strings.Repeat("x", 10))},
		"entries": {dir("a"), dir("b"), dir("c")},
	} {
		err := mem.Restore(files)
		require.ErrorIs(t, err, vfs.ErrNoSpace, name)
		assert.Equal(t, want, mem.Snapshot(), name)
	}
	require.NoError(t, mem.Restore([]vfs.MemFile{dir("a"), file("a/b", "xxxxx")}), "exactly at the limits")
	require.ErrorIs(t, mem.CheckPath("x/../y"), fs.ErrInvalid)
	require.NoError(t, mem.CheckPath("x/y z.csv"))
}

// TestMemFSRenameKeepsPathsLoadable: renaming a deep tree under a deep
// target cannot produce paths past the sandbox's limits (which a saved
// session could then not load): the rename fails with Errno 36 and the
// tree stays as it was, and every path in it still restores.
func TestMemFSRenameKeepsPathsLoadable(t *testing.T) {
	it := runtimetest.NewInterp(t)
	mem := vfs.NewMemFS("/work")
	deep := strings.Repeat("d/", 40)
	_, err := runtimetest.HostRun(t, it, &runtime.Host{OS: mem}, `
import os
os.makedirs('/work/a/`+deep+`x')
os.makedirs('/work/b/`+deep+`y')
os.rename('/work/a', '/work/b/`+deep+`y/a')`)
	var pe *runtime.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "OSError", pe.Type)
	assert.Contains(t, pe.Message, "[Errno 36] File name too long")
	snap := mem.Snapshot()
	assert.NoError(t, vfs.NewMemFS("/work").Restore(snap), "what the code left is loadable")
	has := map[string]bool{}
	for _, f := range snap {
		has[f.Path] = true
	}
	assert.True(t, has["a"], "the rename changed nothing")
}

// TestMountAtRoot: a mount at "/" serves nested paths, listings and its
// root as a mount anywhere else does.
func TestMountAtRoot(t *testing.T) {
	it := runtimetest.NewInterp(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("host"), 0o644))
	over, err := vfs.OpenOverlayFS(dir, "/", vfs.OverlayOptions{})
	require.NoError(t, err)
	defer over.Close()
	for name, h := range map[string]runtime.OSHandler{"memfs": vfs.NewMemFS("/"), "overlay": over} {
		v, err := runtimetest.HostRun(t, it, &runtime.Host{OS: h}, `
import os
from pathlib import Path
os.makedirs('/sub/deeper')
Path('/sub/deeper/f.txt').write_text('x')
(sorted(p.name for p in Path('/').iterdir()), Path('/sub/deeper/f.txt').read_text(), os.listdir('/sub'))`)
		require.NoError(t, err, name)
		names := v.(object.Tuple)[0].(object.List)
		assert.Contains(t, names, object.Value(object.Str("sub")), name)
		assert.Equal(t, object.Str("x"), v.(object.Tuple)[1], name)
		assert.Equal(t, object.List{object.Str("deeper")}, v.(object.Tuple)[2], name)
		_, err = runtimetest.HostRun(t, it, &runtime.Host{OS: h}, "import os\nos.rmdir('/')")
		require.ErrorAs(t, err, new(*runtime.Error), name)
		assert.Contains(t, err.Error(), "PermissionError", name)
	}
	b, err := os.ReadFile(filepath.Join(dir, "in.txt"))
	require.NoError(t, err)
	assert.Equal(t, "host", string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "the overlay left the host directory alone")
}
