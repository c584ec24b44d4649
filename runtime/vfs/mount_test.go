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

func TestParseMount(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		spec string
		want vfs.MountSpec
	}{
		{dir + ":/data", vfs.MountSpec{Host: dir, Guest: "/data", Mode: vfs.MountReadOnly}},
		{dir + ":/data:ro", vfs.MountSpec{Host: dir, Guest: "/data", Mode: vfs.MountReadOnly}},
		{dir + ":/data:rw", vfs.MountSpec{Host: dir, Guest: "/data", Mode: vfs.MountReadWrite}},
		{dir + ":/a/../b/:overlay", vfs.MountSpec{Host: dir, Guest: "/b", Mode: vfs.MountOverlay}},
		{dir + ":/", vfs.MountSpec{Host: dir, Guest: "/", Mode: vfs.MountReadOnly}},
		// monty's own CLI form, with its optional write limit.
		{dir + "::/data", vfs.MountSpec{Host: dir, Guest: "/data"}},
		{dir + "::/data::read-write::1000", vfs.MountSpec{Host: dir, Guest: "/data", Mode: vfs.MountReadWrite, WriteLimit: 1000}},
		{dir + "::/data::overlay", vfs.MountSpec{Host: dir, Guest: "/data", Mode: vfs.MountOverlay}},
	} {
		got, err := vfs.ParseMount(tc.spec)
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, got, tc.spec)
	}
	assert.Equal(t, dir+":/data:overlay", vfs.MountSpec{Host: dir, Guest: "/data", Mode: vfs.MountOverlay}.String())

	for _, tc := range []struct{ spec, says string }{
		{"", "missing the guest path"},
		{dir, "missing the guest path"},
		{dir + ":", "missing the guest path"},
		{":/data", "host directory is empty"},
		{dir + ":data", `guest path "data" must be absolute`},
		{dir + ":/data:bogus", `unknown mode "bogus"`},
		{dir + ":/data:RW", `unknown mode "RW"`},
		{dir + ":/data:", "mode after the last colon is empty"},
		{dir + "::/data::", "mode is empty"},
		{dir + "::/data::rw::-1", `write limit "-1"`},
		{dir + "::/data::rw::1MB", `write limit "1MB"`},
		{dir + "::/data::rw::1::x", "too many fields"},
		{dir + ":/da\x00ta", "NUL"},
		{dir + ":/" + strings.Repeat("a", 256), "longer than the sandbox allows"},
		{filepath.Join(dir, "missing") + ":/data", "does not exist"},
		{file + ":/data", "is not a directory"},
	} {
		_, err := vfs.ParseMount(tc.spec)
		require.ErrorIs(t, err, runtime.ErrInvalidOption, tc.spec)
		assert.Contains(t, err.Error(), tc.says, tc.spec)
	}
}

// TestOpenMounts: mounts are refused when they share a guest path or their
// host directories overlap; nested guest paths of disjoint directories
// route each path to the longest mount point.
func TestOpenMounts(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"a/inner", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(base, "a", "f.txt"), []byte("from a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "b", "f.txt"), []byte("from b"), 0o644))
	spec := func(host, guest string, mode vfs.MountMode) vfs.MountSpec {
		return vfs.MountSpec{Host: filepath.Join(base, host), Guest: guest, Mode: mode}
	}
	for _, bad := range [][]vfs.MountSpec{
		{spec("a", "/x", vfs.MountReadOnly), spec("b", "/x", vfs.MountReadWrite)},
		{spec("a", "/x", vfs.MountReadOnly), spec("a", "/y", vfs.MountReadOnly)},
		{spec("a", "/x", vfs.MountReadOnly), spec("a/inner", "/y", vfs.MountReadWrite)},
		{spec("a/inner", "/x", vfs.MountReadOnly), spec("a", "/y", vfs.MountOverlay)},
		{spec("a", "x", vfs.MountReadOnly)},
		{spec("missing", "/x", vfs.MountReadOnly)},
	} {
		_, err := vfs.OpenMounts(bad...)
		require.ErrorIs(t, err, runtime.ErrInvalidOption, bad)
	}

	table, err := vfs.OpenMounts(spec("a", "/data", vfs.MountReadOnly), spec("b", "/data/b", vfs.MountOverlay))
	require.NoError(t, err)
	defer table.Close()
	assert.Equal(t, "/data/b", table.Specs()[0].Guest, "longest mount point first")
	it := runtimetest.NewInterp(t)
	v, err := runtimetest.HostRun(t, it, &runtime.Host{OS: table}, `
from pathlib import Path
Path('/data/b/new.txt').write_text('overlay')
(Path('/data/f.txt').read_text(), Path('/data/b/f.txt').read_text(), Path('/data/b/new.txt').read_text())
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("from a"), object.Str("from b"), object.Str("overlay")}, v)
	_, err = runtimetest.HostRun(t, it, &runtime.Host{OS: table}, "from pathlib import Path\nPath('/data/new.txt').write_text('x')")
	assert.Equal(t, "PermissionError: [Errno 30] Read-only file system: '/data/new.txt'", runtimetest.PyErr(t, err))
	// A rename between two mounts, or between a mount and the outside, is
	// a cross-device link, whichever end is mounted.
	for _, c := range [][2]string{{"/data/b/new.txt", "/data/x"}, {"/data/b/new.txt", "/elsewhere"}, {"/elsewhere", "/data/b/x"}} {
		_, err := table.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.rename", Args: []object.Value{object.Path(c[0]), object.Path(c[1])}})
		var exc *runtime.Exception
		require.ErrorAs(t, err, &exc, c)
		assert.Equal(t, "[Errno 18] Invalid cross-device link: '"+c[0]+"' -> '"+c[1]+"'", exc.Message)
	}
	require.NoError(t, table.Close())
	var none *vfs.MountTable
	_, err = none.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.exists", Args: []object.Value{object.Path("/data")}})
	require.ErrorIs(t, err, runtime.ErrNotHandled)
}

// TestMountSpecOpen opens each mode and checks what it is.
func TestMountSpecOpen(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[vfs.MountMode]any{
		vfs.MountReadOnly:  &vfs.DirFS{},
		vfs.MountReadWrite: &vfs.DirFS{},
		vfs.MountOverlay:   &vfs.OverlayFS{},
	} {
		h, err := vfs.MountSpec{Host: dir, Guest: "/data", Mode: mode}.Open()
		require.NoError(t, err)
		assert.IsType(t, want, h, mode.String())
		require.NoError(t, h.Close())
	}
	_, err := vfs.MountSpec{Host: dir, Guest: "data"}.Open()
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	_, err = vfs.OpenDirFS(dir, "/data", vfs.DirFSOptions{WriteLimit: -1})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	_, err = vfs.OpenOverlayFS(filepath.Join(dir, "missing"), "/data", vfs.OverlayOptions{})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = vfs.OpenOverlayFS(dir, "relative", vfs.OverlayOptions{})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
}
