package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
	"github.com/monty-go/monty/runtime/vfs"
)

const zoneCode = `
from datetime import datetime, timezone
import time
summer = datetime(2024, 6, 15, 12, 30, tzinfo=timezone.utc).astimezone()
winter = datetime(2024, 1, 15, 12, 30, tzinfo=timezone.utc).astimezone()
(summer.strftime('%H:%M %Z'), winter.strftime('%H:%M %Z'), time.tzname)
`

func TestWithTimezone(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	run := func(opts ...runtime.CompileOption) object.Value {
		t.Helper()
		p, err := it.Compile(ctx, zoneCode, opts...)
		require.NoError(t, err)
		defer p.Close()
		v, err := p.Run(ctx)
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, object.Tuple{object.Str("12:30 UTC"), object.Str("12:30 UTC"),
		object.Tuple{object.Str("UTC"), object.Str("UTC")}}, run(), "default UTC")
	assert.Equal(t, object.Tuple{object.Str("13:30 BST"), object.Str("12:30 GMT"),
		object.Tuple{object.Str("GMT"), object.Str("BST")}}, run(runtime.WithTimezone("Europe/London")))
	assert.Equal(t, object.Tuple{object.Str("22:30 AEST"), object.Str("23:30 AEDT"),
		object.Tuple{object.Str("AEST"), object.Str("AEDT")}}, run(runtime.WithTimezone("Australia/Sydney")))

	// The zone survives a program dump and load.
	p, err := it.Compile(ctx, zoneCode, runtime.WithTimezone("Europe/London"))
	require.NoError(t, err)
	dump, err := p.Dump(ctx)
	require.NoError(t, err)
	p.Close()
	p, err = it.LoadProgram(ctx, dump)
	require.NoError(t, err)
	v, err := p.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, object.Str("13:30 BST"), v.(object.Tuple)[0])

	// REPLs take it too.
	r, err := it.NewREPL(ctx, runtime.WithTimezone("America/New_York"))
	require.NoError(t, err)
	v, err = (&runtime.Host{}).Feed(ctx, r, "from datetime import datetime, timezone\ndatetime(2024, 6, 15, 12, 30, tzinfo=timezone.utc).astimezone().strftime('%H:%M %Z')")
	require.NoError(t, err)
	assert.Equal(t, object.Str("08:30 EDT"), v)

	for _, bad := range []string{"Mars/Olympus_Mons", "../etc/passwd"} {
		_, err = it.Compile(ctx, "1", runtime.WithTimezone(bad))
		require.ErrorIs(t, err, runtime.ErrInvalidOption, bad)
		assert.Contains(t, err.Error(), "unknown time zone")
		_, err = it.NewREPL(ctx, runtime.WithTimezone(bad))
		require.ErrorIs(t, err, runtime.ErrInvalidOption, bad)
	}
	// The interpreter is still usable after a refused option.
	v, err = runtimetest.HostRun(t, it, &runtime.Host{}, "1 + 1")
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), v)
}

func TestWithCwd(t *testing.T) {
	ctx := context.Background()
	it := runtimetest.NewInterp(t)
	mem := vfs.NewMemFS("/mnt")
	require.NoError(t, mem.WriteFile("/mnt/sub/hello.txt", []byte("hello")))
	h := &runtime.Host{OS: mem}

	v, err := runtimetest.HostRun(t, it, h, "import os\nos.getcwd()")
	require.NoError(t, err)
	assert.Equal(t, object.Str("/"), v, "default")

	code := "import os\nfrom pathlib import Path\n(os.getcwd(), open('sub/hello.txt').read(), str(Path('x').absolute()))"
	p, err := it.Compile(ctx, code, runtime.WithCwd("/mnt"))
	require.NoError(t, err)
	defer p.Close()
	for range 2 { // every run starts there
		v, err = h.Run(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, object.Tuple{object.Str("/mnt"), object.Str("hello"), object.Str("/mnt/x")}, v)
	}
	v, err = runtimetest.HostRun(t, it, h, "import os\nos.getcwd()", runtime.WithCwd("/mnt/sub/../sub/"))
	require.NoError(t, err)
	assert.Equal(t, object.Str("/mnt/sub"), v, "normalised")

	// A REPL starts there and keeps os.chdir between snippets.
	r, err := it.NewREPL(ctx, runtime.WithCwd("/mnt"))
	require.NoError(t, err)
	v, err = h.Feed(ctx, r, "import os\nos.getcwd()")
	require.NoError(t, err)
	assert.Equal(t, object.Str("/mnt"), v)
	_, err = h.Feed(ctx, r, "os.chdir('sub')")
	require.NoError(t, err)
	v, err = h.Feed(ctx, r, "(os.getcwd(), open('hello.txt').read())")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("/mnt/sub"), object.Str("hello")}, v)

	// A REPL dump keeps its directory and zone.
	r, err = it.NewREPL(ctx, runtime.WithCwd("/mnt"), runtime.WithTimezone("Europe/London"))
	require.NoError(t, err)
	_, err = h.Feed(ctx, r, "import os, time\nos.chdir('sub')")
	require.NoError(t, err)
	dump, err := r.Dump(ctx)
	require.NoError(t, err)
	r.Close()
	r, _, err = it.LoadREPL(ctx, dump)
	require.NoError(t, err)
	v, err = h.Feed(ctx, r, "(os.getcwd(), time.tzname[1])")
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("/mnt/sub"), object.Str("BST")}, v)

	// Both options together.
	v, err = runtimetest.HostRun(t, it, h, "import os, time\n(os.getcwd(), time.tzname[0])",
		runtime.WithCwd("/mnt"), runtime.WithTimezone("Asia/Kathmandu"))
	require.NoError(t, err)
	assert.Equal(t, object.Tuple{object.Str("/mnt"), object.Str("+0545")}, v)

	for _, bad := range []string{"mnt", "./x"} {
		_, err = it.Compile(ctx, "1", runtime.WithCwd(bad))
		require.ErrorIs(t, err, runtime.ErrInvalidOption, bad)
		_, err = it.NewREPL(ctx, runtime.WithCwd(bad))
		require.ErrorIs(t, err, runtime.ErrInvalidOption, bad)
	}
}
