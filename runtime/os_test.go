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
)

func hostRun(t *testing.T, it *runtime.Interpreter, h *runtime.Host, code string, opts ...runtime.CompileOption) (object.Value, error) {
	t.Helper()
	p, err := it.Compile(context.Background(), code, opts...)
	require.NoError(t, err)
	defer p.Close()
	return h.Run(context.Background(), p)
}

func pyErrType(t *testing.T, err error) string {
	t.Helper()
	var pyErr *runtime.Error
	require.ErrorAs(t, err, &pyErr)
	return pyErr.Type
}

func TestOSDeniedByDefault(t *testing.T) {
	it := newInterp(t)
	for _, code := range []string{
		"from pathlib import Path\nPath('/etc/passwd').read_text()",
		"import os\nos.getenv('HOME')",
		"open('/tmp/x', 'w')",
	} {
		_, err := hostRun(t, it, &runtime.Host{}, code)
		assert.Equal(t, "PermissionError", pyErrType(t, err), code)
	}
}

func TestMemFS(t *testing.T) {
	it := newInterp(t)
	mem := runtime.NewMemFS("/work")
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
	v, err := hostRun(t, it, h, code)
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("HELLO!"), object.List{object.Str("result.txt")},
		object.Bool(true), object.Bool(false), object.Int(6)}, v)
	b, err := mem.ReadFile("/work/out/result.txt")
	require.NoError(t, err)
	assert.Equal(t, "HELLO!", string(b))

	_, err = hostRun(t, it, h, "from pathlib import Path\nPath('/work/missing').read_text()")
	assert.Equal(t, "FileNotFoundError", pyErrType(t, err))
	_, err = hostRun(t, it, h, "from pathlib import Path\nPath('/elsewhere/x').read_text()")
	assert.Equal(t, "PermissionError", pyErrType(t, err), "outside the mount is denied")
	_, err = hostRun(t, it, h, "from pathlib import Path\nPath('/work/in').rmdir()")
	assert.Equal(t, "OSError", pyErrType(t, err))
}

func TestDirFSConfinement(t *testing.T) {
	it := newInterp(t)
	base := t.TempDir()
	data := filepath.Join(base, "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "in.txt"), []byte("inside"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(data, "link.txt")))
	require.NoError(t, os.Symlink(base, filepath.Join(data, "up")))

	ro, err := runtime.NewDirFS(data, "/data", false)
	require.NoError(t, err)
	defer ro.Close()
	h := &runtime.Host{OS: ro}
	v, err := hostRun(t, it, h, "from pathlib import Path\nPath('/data/in.txt').read_text()")
	require.NoError(t, err)
	assert.Equal(t, object.Str("inside"), v)

	for _, p := range []string{"/data/../secret.txt", "/data/link.txt", "/data/up/secret.txt"} {
		_, err := hostRun(t, it, h, "from pathlib import Path\nPath('"+p+"').read_text()")
		typ := pyErrType(t, err)
		assert.Contains(t, []string{"PermissionError", "FileNotFoundError"}, typ, p)
	}
	_, err = hostRun(t, it, h, "from pathlib import Path\nPath('/data/new.txt').write_text('x')")
	assert.Equal(t, "PermissionError", pyErrType(t, err), "read-only mount")
	_, err = os.Stat(filepath.Join(data, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	rw, err := runtime.NewDirFS(data, "/data", true)
	require.NoError(t, err)
	defer rw.Close()
	_, err = hostRun(t, it, &runtime.Host{OS: rw}, "from pathlib import Path\nPath('/data/new.txt').write_text('written')")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(data, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written", string(b))
	_, err = hostRun(t, it, &runtime.Host{OS: rw}, "from pathlib import Path\nPath('/data/up/evil.txt').write_text('x')")
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(base, "evil.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "a symlink cannot lead a write outside the mount")
}

func TestEnvAndClock(t *testing.T) {
	it := newInterp(t)
	fixed := time.Date(2024, 2, 29, 13, 45, 0, 0, time.UTC)
	h := &runtime.Host{OS: runtime.Chain{
		runtime.Env{"APP": "demo"},
		runtime.Clock{Now: func() time.Time { return fixed }},
	}}
	v, err := hostRun(t, it, h, "import os\n(os.getenv('APP'), os.getenv('NOPE'), os.getenv('NOPE', 'd'), dict(os.environ))")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("demo"), object.None{}, object.Str("d"),
		object.Dict{{Key: object.Str("APP"), Value: object.Str("demo")}}}, v)

	v, err = hostRun(t, it, h, "from datetime import date, datetime\nimport time\n(date.today().isoformat(), datetime.now().hour, int(time.time()))",
		runtime.WithHostClock())
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("2024-02-29"), object.Int(13), object.Int(fixed.Unix())}, v)
}
