package session_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
	"github.com/monty-go/monty/session/store/storeurl"
)

// filesOpts are the options of a session with files.
func filesOpts(st store.Store) session.Options {
	return session.Options{Store: st, Files: &session.Files{}}
}

// TestFilesPersistAcrossCalls: a file written with open() in one call is
// there in the next, in a new Session on the same store (another process),
// relative paths land in /work, and the Go API sees what the code wrote.
func TestFilesPersistAcrossCalls(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "f1", filesOpts(st))
	res := exec(t, s, `
import os
with open('/work/out.csv', 'w') as f:
    f.write('a,b\n')
    f.write('1,2\n')
os.makedirs('/work/sub/deep')
open('rel.txt', 'w').write('relative')
os.getcwd()`)
	require.Nil(t, res.Err)
	assert.True(t, res.Saved)
	assert.Equal(t, object.Str("/work"), res.Value)

	res = exec(t, s, "open('/work/out.csv').read() + open('/work/rel.txt').read()")
	assert.Equal(t, object.Str("a,b\n1,2\nrelative"), res.Value)
	files, err := s.Files()
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Equal(t, "out.csv", files[0].Path)
	assert.Equal(t, int64(8), files[0].Size)
	assert.Equal(t, "rel.txt", files[1].Path)
	require.NoError(t, s.Close(context.Background()))

	again := open(t, "f1", filesOpts(st))
	res = exec(t, again, "from pathlib import Path\n(Path('out.csv').read_text(), Path('/work/sub/deep').is_dir())")
	assert.Equal(t, object.Tuple{object.Str("a,b\n1,2\n"), object.Bool(true)}, res.Value)
	data, err := again.ReadFile("/work/out.csv")
	require.NoError(t, err)
	assert.Equal(t, "a,b\n1,2\n", string(data))
	_, err = again.ReadFile("missing.txt")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = again.ReadFile("sub")
	require.ErrorIs(t, err, fs.ErrNotExist, "a directory is not a file")
}

// TestFilesMoveBetweenStores: a signed session with files is exported from
// a directory store and imported into Redis, then S3; each time a new
// Session continues it with its files.
func TestFilesMoveBetweenStores(t *testing.T) {
	ctx := context.Background()
	key := []byte("files-signing-key")
	prefix := storetest.UniquePrefix(t)
	env := storetest.S3(t)
	s3URL := url.URL{Scheme: "s3", Host: env.Endpoint, Path: "/" + env.Bucket, RawQuery: "prefix=" + prefix,
		User: url.UserPassword(env.AccessKey, env.SecretKey)}
	var stores []store.Store
	for _, spec := range []string{t.TempDir(), storetest.RedisURL(t) + "?prefix=monty-" + prefix, s3URL.String()} {
		st, err := storeurl.Open(ctx, spec)
		require.NoError(t, err, spec)
		t.Cleanup(func() { _ = st.Delete(ctx, "mover"); st.Close() })
		stores = append(stores, st)
	}
	s := open(t, "mover", session.Options{Store: stores[0], SigningKey: key, Files: &session.Files{}})
	res := exec(t, s, "import random\nopen('/work/data.bin', 'w').write(''.join([str(random.random()) for i in range(300)]))\nopen('/work/n.txt', 'w').write('0')")
	require.Nil(t, res.Err)
	want, err := s.ReadFile("data.bin")
	require.NoError(t, err)
	require.Greater(t, len(want), 3000)
	for i := 1; i < len(stores); i++ {
		obj, err := stores[i-1].Get(ctx, "mover")
		require.NoError(t, err)
		_, err = stores[i].Put(ctx, "mover", obj.Data, store.Cond{})
		require.NoError(t, err)
		s := open(t, "mover", session.Options{Store: stores[i], SigningKey: key, Files: &session.Files{}})
		res := exec(t, s, "n = int(open('/work/n.txt').read()) + 1\nopen('/work/n.txt', 'w').write(str(n))\nn")
		assert.Equal(t, object.Int(i), res.Value)
		got, err := s.ReadFile("data.bin")
		require.NoError(t, err)
		assert.Equal(t, want, got)
		listed, err := session.ListFiles(ctx, "mover", session.Options{Store: stores[i], SigningKey: key})
		require.NoError(t, err)
		assert.Len(t, listed, 2)
	}
}

// TestFilesRollBack: a call that raises, or whose state is over the size
// cap, leaves the files as they were; with CaptureOnError its files stay.
func TestFilesRollBack(t *testing.T) {
	st := memstore.New(memstore.Options{})
	opts := session.Options{Store: st, Files: &session.Files{}, MaxStateSize: 64 << 10, NoCompression: true}
	s := open(t, "rb", opts)
	exec(t, s, "open('keep.txt', 'w').write('kept')")

	res := exec(t, s, "import os\nopen('keep.txt', 'w').write('changed')\nopen('new.txt', 'w').write('new')\nos.remove('keep.txt')\nraise ValueError('boom')")
	require.NotNil(t, res.Err)
	assert.False(t, res.Saved)
	res = exec(t, s, "import os\n(open('keep.txt').read(), os.path.exists('new.txt'))")
	assert.Equal(t, object.Tuple{object.Str("kept"), object.Bool(false)}, res.Value)

	// Files within their limit (at most MaxStateSize) but a state over
	// MaxStateSize: not saved, and rolled back.
	res = exec(t, s, "open('big.bin', 'wb').write(b'x' * 65000)")
	require.Nil(t, res.Err)
	assert.False(t, res.Saved)
	assert.Contains(t, res.NotSavedReason, "over the 65536-byte limit")
	res = exec(t, s, "import os\nos.path.exists('big.bin')")
	assert.Equal(t, object.Bool(false), res.Value)
	files, err := s.Files()
	require.NoError(t, err)
	require.Len(t, files, 1)

	opts.CaptureOnError = true
	c := open(t, "rb", opts)
	res = exec(t, c, "open('keep.txt', 'a').write('!')\n1/0")
	require.NotNil(t, res.Err)
	assert.True(t, res.Saved)
	data, err := session.ReadFile(context.Background(), "rb", "keep.txt", session.Options{Store: st})
	require.NoError(t, err)
	assert.Equal(t, "kept!", string(data))
}

// TestFilesLimit: code that writes past Files.MaxBytes gets OSError
// "[Errno 28] No space left on device"; caught, the call goes on and saves
// what fits. The limit is at most MaxStateSize.
func TestFilesLimit(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "cap", session.Options{Store: st, Files: &session.Files{MaxBytes: 10000, MaxEntries: 10}})
	res := exec(t, s, "f = open('log.txt', 'a')\nfor i in range(200):\n    f.write('x' * 100)")
	require.NotNil(t, res.Err)
	assert.Equal(t, "OSError", res.Err.Type)
	assert.Contains(t, res.Err.Message, "[Errno 28] No space left on device: '/work/log.txt'")
	res = exec(t, s, `
n = 0
try:
    while True:
        open(f'/work/e{n}', 'w').close()
        n += 1
except OSError as e:
    msg = str(e)
n`)
	require.Nil(t, res.Err)
	assert.Equal(t, object.Int(10), res.Value)
	assert.True(t, res.Saved)
	files, err := s.Files()
	require.NoError(t, err)
	assert.Len(t, files, 10)
	_, err = s.WriteFile(context.Background(), "one-more", nil)
	require.ErrorIs(t, err, vfs.ErrNoSpace)

	small := open(t, "cap2", session.Options{Store: st, Files: &session.Files{MaxBytes: 1 << 30}, MaxStateSize: 20000})
	res = exec(t, small, "open('big', 'wb').write(b'x' * 30000)")
	require.NotNil(t, res.Err, "the limit is at most MaxStateSize")
	assert.Contains(t, res.Err.Message, "No space left on device")
}

// TestFilesSection: a session's files are in its blob's files section
// while /work has any, and the section is empty again once /work is.
func TestFilesSection(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	filesSize := func(id string) int64 {
		obj, err := st.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, byte(5), obj.Data[4], "an idle session with a dump: version 5")
		info, err := session.Inspect(obj.Data, nil)
		require.NoError(t, err)
		return info.FilesSize
	}
	exec(t, open(t, "plain", session.Options{Store: st}), "x = 1")
	assert.Zero(t, filesSize("plain"))
	s := open(t, "files", filesOpts(st))
	exec(t, s, "x = 1")
	assert.Zero(t, filesSize("files"), "an empty /work adds nothing")
	exec(t, s, "open('a', 'w').write('a')")
	assert.Positive(t, filesSize("files"))
	exec(t, s, "import os\nos.remove('a')")
	assert.Zero(t, filesSize("files"))
}

// TestFilesKeptWithoutOption: a session opened without Options.Files
// cannot see /work, but its saves keep the stored files.
func TestFilesKeptWithoutOption(t *testing.T) {
	st := memstore.New(memstore.Options{})
	exec(t, open(t, "carry", filesOpts(st)), "open('a.txt', 'w').write('A')\nx = 1")
	plain := open(t, "carry", session.Options{Store: st})
	res := exec(t, plain, "x += 1\nx")
	assert.Equal(t, object.Int(2), res.Value)
	res, err := plain.Exec(context.Background(), "open('/work/a.txt').read()")
	require.NoError(t, err)
	require.NotNil(t, res.Err)
	assert.Equal(t, "PermissionError", res.Err.Type)
	files, err := plain.Files()
	require.NoError(t, err)
	require.Len(t, files, 1)
	_, err = plain.WriteFile(context.Background(), "b.txt", nil)
	require.ErrorIs(t, err, session.ErrNoFiles)

	res = exec(t, open(t, "carry", filesOpts(st)), "(x, open('a.txt').read())")
	assert.Equal(t, object.Tuple{object.Int(2), object.Str("A")}, res.Value)
}

// TestFilesBehindHost: /work is served in front of the Host's OS handler,
// which still answers everything else.
func TestFilesBehindHost(t *testing.T) {
	st := memstore.New(memstore.Options{})
	hostDir := vfs.NewMemFS("/data")
	require.NoError(t, hostDir.WriteFile("/data/in.txt", []byte("input")))
	host := &runtime.Host{OS: runtime.Chain{hostDir, runtime.Env{"MODE": "test"}}}
	s := open(t, "host", session.Options{Store: st, Host: host, Files: &session.Files{}})
	res := exec(t, s, "import os\nopen('/work/out.txt', 'w').write(open('/data/in.txt').read().upper())\n(os.getenv('MODE'), open('/work/out.txt').read())")
	assert.Equal(t, object.Tuple{object.Str("test"), object.Str("INPUT")}, res.Value)
	res, err := s.Exec(context.Background(), "open('/etc/passwd').read()")
	require.NoError(t, err)
	require.NotNil(t, res.Err)
	assert.Equal(t, "PermissionError", res.Err.Type)
	_, err = hostDir.ReadFile("/data/out.txt")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestFileOperations: the file operations on a stored session (no
// interpreter) and on a live one: create, replace, list, read, remove, bad
// paths, missing files and sessions, and compare-and-set against calls.
func TestFileOperations(t *testing.T) {
	ctx := context.Background()
	key := []byte("ops-key")
	st := memstore.New(memstore.Options{})
	opts := session.Options{Store: st, SigningKey: key, Files: &session.Files{}}

	_, err := session.ListFiles(ctx, "ops", opts)
	require.ErrorIs(t, err, store.ErrNotFound)
	up, err := session.WriteFile(ctx, "ops", "in/data.csv", []byte("x\n1\n"), opts)
	require.NoError(t, err, "a write creates the session")
	assert.True(t, up.Created)
	up, err = session.WriteFile(ctx, "ops", "/work/in/data.csv", []byte("x\n1\n2\n"), opts)
	require.NoError(t, err)
	assert.False(t, up.Created)
	obj, err := st.Get(ctx, "ops")
	require.NoError(t, err)
	assert.Equal(t, up.State.SHA256, obj.Info.SHA256)

	s := open(t, "ops", opts)
	res := exec(t, s, "rows = open('in/data.csv').read().split()\nopen('out.txt', 'w').write(str(len(rows)))\nlen(rows)")
	assert.Equal(t, object.Int(3), res.Value)
	files, err := session.ListFiles(ctx, "ops", opts)
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Equal(t, []string{"in/data.csv", "out.txt"}, []string{files[0].Path, files[1].Path})
	data, err := session.ReadFile(ctx, "ops", "out.txt", opts)
	require.NoError(t, err)
	assert.Equal(t, "3", string(data))

	for _, bad := range []string{"../x", "/etc/passwd", "/work/../x", "a/../b", "", ".", "a\x00b", "a//b", "/work", "/workx/y"} {
		_, err := session.WriteFile(ctx, "ops", bad, []byte("x"), opts)
		require.ErrorIs(t, err, fs.ErrInvalid, "%q", bad)
		_, err = session.ReadFile(ctx, "ops", bad, opts)
		require.ErrorIs(t, err, fs.ErrInvalid, "%q", bad)
		_, err = s.WriteFile(ctx, bad, []byte("x"))
		require.ErrorIs(t, err, fs.ErrInvalid, "%q", bad)
	}
	_, err = session.WriteFile(ctx, "ops", "in", []byte("x"), opts)
	require.ErrorIs(t, err, fs.ErrInvalid, "a directory is in the way")
	_, err = session.WriteFile(ctx, "ops", "out.txt/x", []byte("x"), opts)
	require.ErrorIs(t, err, fs.ErrInvalid, "a file is in the way")
	_, err = session.ReadFile(ctx, "ops", "nope.txt", opts)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = session.RemoveFile(ctx, "ops", "nope.txt", opts)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = session.ReadFile(ctx, "ops", "out.txt", session.Options{Store: st, SigningKey: []byte("other key")})
	require.ErrorIs(t, err, session.ErrCorrupt, "the blob must verify")
	_, err = session.WriteFile(ctx, "ops", "big", make([]byte, 17<<20), opts)
	require.ErrorIs(t, err, vfs.ErrNoSpace)

	// Another writer since the session's last call: the call continues
	// what is stored, files included.
	_, err = session.WriteFile(ctx, "ops", "note.txt", []byte("from outside"), opts)
	require.NoError(t, err)
	res = exec(t, s, "open('out.txt', 'w').write('mine')\n(open('note.txt').read(), open('out.txt').read())")
	assert.Equal(t, object.Tuple{object.Str("from outside"), object.Str("mine")}, res.Value)
	data, err = session.ReadFile(ctx, "ops", "out.txt", opts)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data))

	// The live session's own operations: stored at once, under the same
	// compare-and-set.
	up, err = s.WriteFile(ctx, "live.txt", []byte("live"))
	require.NoError(t, err)
	assert.True(t, up.Created)
	data, err = session.ReadFile(ctx, "ops", "live.txt", opts)
	require.NoError(t, err)
	assert.Equal(t, "live", string(data))
	assert.Equal(t, object.Str("live"), exec(t, s, "open('live.txt').read()").Value)
	_, err = s.RemoveFile(ctx, "live.txt")
	require.NoError(t, err)
	_, err = session.ReadFile(ctx, "ops", "live.txt", opts)
	require.ErrorIs(t, err, fs.ErrNotExist)

	other := open(t, "ops", opts)
	exec(t, other, "open('other.txt', 'w').write('o')")
	_, err = s.WriteFile(ctx, "stale.txt", []byte("x"))
	require.ErrorIs(t, err, store.ErrConflict)
	files, err = s.Files()
	require.NoError(t, err)
	assert.Contains(t, fmt.Sprint(files), "other.txt", "the conflict reloaded the stored files")
	assert.NotContains(t, fmt.Sprint(files), "stale.txt")
	_, err = s.RemoveFile(ctx, "other.txt")
	require.NoError(t, err)

	// A live session with no stored state yet: its first state is the file.
	fresh := open(t, "fresh", opts)
	_, err = fresh.WriteFile(ctx, "seed.txt", []byte("seed"))
	require.NoError(t, err)
	res = exec(t, fresh, "open('seed.txt').read()")
	assert.Equal(t, object.Str("seed"), res.Value)
	reopened := open(t, "fresh", opts)
	assert.Equal(t, object.Str("seed"), exec(t, reopened, "open('seed.txt').read()").Value)
}

// TestStoredFilesOverLimits: files stored under larger limits than the
// opening session's are not loaded, and not taken for corruption: the
// blob stays as it is for a caller with those limits.
func TestStoredFilesOverLimits(t *testing.T) {
	ctx := context.Background()
	st, err := dirstore.Open(t.TempDir(), dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	exec(t, open(t, "big", filesOpts(st)), "open('a.bin', 'wb').write(b'x' * 5000)")
	before, err := st.Get(ctx, "big")
	require.NoError(t, err)
	_, err = session.Open(ctx, "big", session.Options{Store: st, Files: &session.Files{MaxBytes: 1000}})
	require.ErrorIs(t, err, vfs.ErrNoSpace)
	assert.NotErrorIs(t, err, session.ErrCorrupt)
	assert.Contains(t, err.Error(), "kept unchanged")
	assert.Equal(t, 0, corruptCopies(t, st, "big"))
	after, err := st.Get(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, before.Data, after.Data)
	_, err = session.ListFiles(ctx, "big", session.Options{Store: st, Files: &session.Files{MaxEntries: 1, MaxBytes: 1000}})
	require.ErrorIs(t, err, vfs.ErrNoSpace)
	assert.True(t, strings.Contains(err.Error(), "open it with larger limits"), err)
}
