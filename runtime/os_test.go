package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
	"github.com/monty-go/monty/runtime/vfs"
)

// TestOSUnservedLikeUpstream: an OS call no handler serves raises what
// upstream Monty (pydantic-monty 1.4.0 without an OS handler) raises, type
// and message, so code takes the same except branch under both
// (testdata/clients/parity.py compares the two): a file operation is a
// PermissionError naming its path, made absolute and normalized; the
// environment, os.urandom and a host clock are RuntimeError; an import is
// ModuleNotFoundError. The same holds behind a Chain whose handlers all pass.
func TestOSUnservedLikeUpstream(t *testing.T) {
	it := runtimetest.NewInterp(t)
	cases := []struct{ code, want string }{
		{"from pathlib import Path\nPath('/etc/passwd').read_text()", "PermissionError: Permission denied: '/etc/passwd'"},
		{"from pathlib import Path\nPath('/etc').exists()", "PermissionError: Permission denied: '/etc'"},
		{"from pathlib import Path\nPath('/tmp/a').rename('/tmp/b')", "PermissionError: Permission denied: '/tmp/a'"},
		{"import os\nos.listdir('/etc')", "PermissionError: Permission denied: '/etc'"},
		{"open('/tmp/x', 'w')", "PermissionError: Permission denied: '/tmp/x'"},
		{"open('data.txt')", "PermissionError: Permission denied: '/data.txt'"},
		{"open('/tmp/../etc/./passwd')", "PermissionError: Permission denied: '/etc/passwd'"},
		{"import os\nos.getenv('HOME')", "RuntimeError: 'os.getenv' is not supported in this environment"},
		{"import os\nos.getenv('HOME', 'default')", "RuntimeError: 'os.getenv' is not supported in this environment"},
		{"import os\nos.environ.get('HOME')", "RuntimeError: 'os.environ' is not supported in this environment"},
		{"import os\nos.urandom(4)", "RuntimeError: 'os.urandom' is not supported in this environment"},
		{"import numpy", "ModuleNotFoundError: No module named 'numpy'"},
	}
	pass := runtime.OSFunc(func(context.Context, *runtime.OSCall) (object.Value, error) { return nil, runtime.ErrNotHandled })
	for name, h := range map[string]*runtime.Host{
		"no handler": {},
		"chain":      {OS: runtime.Chain{pass, vfs.NewMemFS("/work")}},
	} {
		for _, c := range cases {
			_, err := runtimetest.HostRun(t, it, h, c.code)
			assert.Equal(t, c.want, runtimetest.PyErr(t, err), "%s: %s", name, c.code)
		}
	}
	// The clock, when the program asks the host for it.
	_, err := runtimetest.HostRun(t, it, &runtime.Host{}, "import time\ntime.time()", runtime.WithHostClock())
	assert.Equal(t, "RuntimeError: 'time.time' is not supported in this environment", runtimetest.PyErr(t, err))
	// The branches: a PermissionError is an OSError, the RuntimeError is not.
	v, err := runtimetest.HostRun(t, it, &runtime.Host{}, `
import os
caught = []
for f in (lambda: open('/etc/passwd'), lambda: os.getenv('HOME')):
    try:
        f()
    except OSError as e:
        caught.append('OSError')
    except RuntimeError as e:
        caught.append('RuntimeError')
caught`)
	require.NoError(t, err)
	assert.Equal(t, object.List{object.Str("OSError"), object.Str("RuntimeError")}, v)
}

func TestMemFS(t *testing.T) {
	it := runtimetest.NewInterp(t)
	mem := vfs.NewMemFS("/work")
	require.NoError(t, mem.WriteFile("/work/in/data.txt", []byte("hello")))
	h := &runtime.Host{OS: mem}
	code := `
from pathlib import Path
src = Path('/work/in/data.txt')
Path('/work/out').mkdir()
dst = Path('/work/out/result.txt')
dst.write_text(src.read_text().upper())
with open('/work/out/result.txt', 'a') as f:
    f.write('!')
names = sorted(p.name for p in Path('/work/out').iterdir())
(dst.read_text(), names, src.exists(), Path('/work/nope').exists(), dst.stat().st_size)
`
	v, err := runtimetest.HostRun(t, it, h, code)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("HELLO!"), object.List{object.Str("result.txt")},
		object.Bool(true), object.Bool(false), object.Int(6)}, v)
	b, err := mem.ReadFile("/work/out/result.txt")
	require.NoError(t, err)
	assert.Equal(t, "HELLO!", string(b))

	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/work/missing').read_text()")
	assert.Equal(t, "FileNotFoundError", runtimetest.PyErrType(t, err))
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/elsewhere/x').read_text()")
	assert.Equal(t, "PermissionError", runtimetest.PyErrType(t, err), "outside the mount is denied")
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/work/in').rmdir()")
	assert.Equal(t, "OSError", runtimetest.PyErrType(t, err))
}

func TestDirFSConfinement(t *testing.T) {
	it := runtimetest.NewInterp(t)
	base := t.TempDir()
	data := filepath.Join(base, "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "in.txt"), []byte("inside"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(data, "link.txt")))
	require.NoError(t, os.Symlink(base, filepath.Join(data, "up")))

	ro, err := vfs.OpenDirFS(data, "/data", vfs.DirFSOptions{})
	require.NoError(t, err)
	defer ro.Close()
	h := &runtime.Host{OS: ro}
	v, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/data/in.txt').read_text()")
	require.NoError(t, err)
	assert.Equal(t, object.Str("inside"), v)

	for _, p := range []string{"/data/../secret.txt", "/data/link.txt", "/data/up/secret.txt"} {
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('"+p+"').read_text()")
		typ := runtimetest.PyErrType(t, err)
		assert.Contains(t, []string{"PermissionError", "FileNotFoundError"}, typ, p)
	}
	_, err = runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/data/new.txt').write_text('x')")
	assert.Equal(t, "PermissionError", runtimetest.PyErrType(t, err), "read-only mount")
	_, err = os.Stat(filepath.Join(data, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	rw, err := vfs.OpenDirFS(data, "/data", vfs.DirFSOptions{ReadWrite: true})
	require.NoError(t, err)
	defer rw.Close()
	_, err = runtimetest.HostRun(t, it, &runtime.Host{OS: rw}, "from pathlib import Path\nPath('/data/new.txt').write_text('written')")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(data, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written", string(b))
	_, err = runtimetest.HostRun(t, it, &runtime.Host{OS: rw}, "from pathlib import Path\nPath('/data/up/evil.txt').write_text('x')")
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(base, "evil.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "a symlink cannot lead a write outside the mount")
}

func TestEnvAndClock(t *testing.T) {
	it := runtimetest.NewInterp(t)
	fixed := time.Date(2024, 2, 29, 13, 45, 0, 0, time.UTC)
	h := &runtime.Host{OS: runtime.Chain{
		runtime.Env{"APP": "demo"},
		runtime.Clock{Now: func() time.Time { return fixed }},
	}}
	v, err := runtimetest.HostRun(t, it, h, "import os\n(os.getenv('APP'), os.getenv('NOPE'), os.getenv('NOPE', 'd'), dict(os.environ))")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("demo"), object.None{}, object.Str("d"),
		object.Dict{{Key: object.Str("APP"), Value: object.Str("demo")}}}, v)

	v, err = runtimetest.HostRun(t, it, h, "from datetime import date, datetime\nimport time\n(date.today().isoformat(), datetime.now().hour, int(time.time()))",
		runtime.WithHostClock())
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("2024-02-29"), object.Int(13), object.Int(fixed.Unix())}, v)
}
