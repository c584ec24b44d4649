package runtime_test

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
)

func TestParseMount(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		spec string
		want runtime.MountSpec
	}{
		{dir + ":/data", runtime.MountSpec{Host: dir, Guest: "/data", Mode: runtime.MountReadOnly}},
		{dir + ":/data:ro", runtime.MountSpec{Host: dir, Guest: "/data", Mode: runtime.MountReadOnly}},
		{dir + ":/data:rw", runtime.MountSpec{Host: dir, Guest: "/data", Mode: runtime.MountReadWrite}},
		{dir + ":/a/../b/:overlay", runtime.MountSpec{Host: dir, Guest: "/b", Mode: runtime.MountOverlay}},
		{dir + ":/", runtime.MountSpec{Host: dir, Guest: "/", Mode: runtime.MountReadOnly}},
		// monty's own CLI form, with its optional write limit.
		{dir + "::/data", runtime.MountSpec{Host: dir, Guest: "/data"}},
		{dir + "::/data::read-write::1000", runtime.MountSpec{Host: dir, Guest: "/data", Mode: runtime.MountReadWrite, WriteLimit: 1000}},
		{dir + "::/data::overlay", runtime.MountSpec{Host: dir, Guest: "/data", Mode: runtime.MountOverlay}},
	} {
		got, err := runtime.ParseMount(tc.spec)
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, got, tc.spec)
	}
	assert.Equal(t, dir+":/data:overlay", runtime.MountSpec{Host: dir, Guest: "/data", Mode: runtime.MountOverlay}.String())

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
		_, err := runtime.ParseMount(tc.spec)
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
	spec := func(host, guest string, mode runtime.MountMode) runtime.MountSpec {
		return runtime.MountSpec{Host: filepath.Join(base, host), Guest: guest, Mode: mode}
	}
	for _, bad := range [][]runtime.MountSpec{
		{spec("a", "/x", runtime.MountReadOnly), spec("b", "/x", runtime.MountReadWrite)},
		{spec("a", "/x", runtime.MountReadOnly), spec("a", "/y", runtime.MountReadOnly)},
		{spec("a", "/x", runtime.MountReadOnly), spec("a/inner", "/y", runtime.MountReadWrite)},
		{spec("a/inner", "/x", runtime.MountReadOnly), spec("a", "/y", runtime.MountOverlay)},
		{spec("a", "x", runtime.MountReadOnly)},
		{spec("missing", "/x", runtime.MountReadOnly)},
	} {
		_, err := runtime.OpenMounts(bad...)
		require.ErrorIs(t, err, runtime.ErrInvalidOption, bad)
	}

	table, err := runtime.OpenMounts(spec("a", "/data", runtime.MountReadOnly), spec("b", "/data/b", runtime.MountOverlay))
	require.NoError(t, err)
	defer table.Close()
	assert.Equal(t, "/data/b", table.Specs()[0].Guest, "longest mount point first")
	it := newInterp(t)
	v, err := hostRun(t, it, &runtime.Host{OS: table}, `
from pathlib import Path
Path('/data/b/new.txt').write_text('overlay')
(Path('/data/f.txt').read_text(), Path('/data/b/f.txt').read_text(), Path('/data/b/new.txt').read_text())
`)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("from a"), object.Str("from b"), object.Str("overlay")}, v)
	_, err = hostRun(t, it, &runtime.Host{OS: table}, "from pathlib import Path\nPath('/data/new.txt').write_text('x')")
	assert.Equal(t, "PermissionError: [Errno 30] Read-only file system: '/data/new.txt'", pyErr(t, err))
	// A rename between two mounts, or between a mount and the outside, is
	// a cross-device link, whichever end is mounted.
	for _, c := range [][2]string{{"/data/b/new.txt", "/data/x"}, {"/data/b/new.txt", "/elsewhere"}, {"/elsewhere", "/data/b/x"}} {
		_, err := table.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.rename", Args: []object.Value{object.Path(c[0]), object.Path(c[1])}})
		var exc *runtime.Exception
		require.ErrorAs(t, err, &exc, c)
		assert.Equal(t, "[Errno 18] Invalid cross-device link: '"+c[0]+"' -> '"+c[1]+"'", exc.Message)
	}
	require.NoError(t, table.Close())
	var none *runtime.MountTable
	_, err = none.HandleOS(context.Background(), &runtime.OSCall{Name: "Path.exists", Args: []object.Value{object.Path("/data")}})
	require.ErrorIs(t, err, runtime.ErrNotHandled)
}

// TestMountSpecOpen opens each mode and checks what it is.
func TestMountSpecOpen(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[runtime.MountMode]any{
		runtime.MountReadOnly:  &runtime.DirFS{},
		runtime.MountReadWrite: &runtime.DirFS{},
		runtime.MountOverlay:   &runtime.OverlayFS{},
	} {
		h, err := runtime.MountSpec{Host: dir, Guest: "/data", Mode: mode}.Open()
		require.NoError(t, err)
		assert.IsType(t, want, h, mode.String())
		require.NoError(t, h.Close())
	}
	_, err := runtime.MountSpec{Host: dir, Guest: "data"}.Open()
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	_, err = runtime.OpenDirFS(dir, "/data", runtime.DirFSOptions{WriteLimit: -1})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	_, err = runtime.OpenOverlayFS(filepath.Join(dir, "missing"), "/data", runtime.OverlayOptions{})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = runtime.OpenOverlayFS(dir, "relative", runtime.OverlayOptions{})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
}
