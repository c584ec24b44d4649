package session_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
)

// sessionFile is the directory store's file of id.
func sessionFile(dir, id string) string {
	return filepath.Join(dir, fmt.Sprintf("%x.session", sha256.Sum256([]byte(id))))
}

// TestDamagedFileInDirStore: a damaged file of the directory store is
// corrupt state (kept aside, then a fresh start or a CorruptStateError),
// never a store outage.
func TestDamagedFileInDirStore(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, path string){
		"garbage": func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("garbage\x00\xff"), 0o600))
		},
		"truncated": func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, fi.Size()/2))
		},
		"empty": func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 0)) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			st, err := dirstore.Open(dir, dirstore.Options{})
			require.NoError(t, err)
			s := open(t, "d", session.Options{Store: st})
			exec(t, s, "x = 41")
			path := sessionFile(dir, "d")
			damage(t, path)
			raw, err := os.ReadFile(path)
			require.NoError(t, err)

			// Without FreshOnCorrupt: a CorruptStateError, not an outage.
			_, err = session.Open(ctx, "d", session.Options{Store: st})
			var cse *session.CorruptStateError
			require.ErrorAs(t, err, &cse)
			assert.ErrorIs(t, err, session.ErrCorrupt)
			assert.ErrorIs(t, err, store.ErrUnreadable)
			assert.True(t, cse.Unreadable())
			require.NotEmpty(t, cse.QuarantinedAs)
			kept, err := st.Get(ctx, cse.QuarantinedAs)
			require.NoError(t, err)
			assert.Equal(t, raw, kept.Data, "the copy kept aside is the damaged file")
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, raw, after, "the original is left in place")

			// With it: kept aside (one copy), started empty, and it says so.
			fresh, err := session.Open(ctx, "d", session.Options{Store: st, FreshOnCorrupt: true})
			require.NoError(t, err)
			defer fresh.Close(ctx)
			r := fresh.Restored()
			assert.True(t, r.Found)
			assert.Equal(t, cse.QuarantinedAs, r.QuarantinedAs)
			assert.ErrorIs(t, r.Err, store.ErrUnreadable)
			assert.Contains(t, r.Reason, "cannot read")
			assert.Equal(t, 1, keptCopies(t, st, "d"))
			res, err := fresh.Exec(ctx, "y = 2\n'x' in locals()")
			require.NoError(t, err)
			assert.Equal(t, object.Bool(false), res.Value)
			assert.True(t, res.Saved, "the fresh state replaces the damaged file")
			again := open(t, "d", session.Options{Store: st})
			assert.Equal(t, object.Int(2), exec(t, again, "y").Value)
			assert.Empty(t, again.Restored().QuarantinedAs)
		})
	}
}

// keptCopies counts the copies of id kept aside; List's skipped damaged
// entries are no failure here.
func keptCopies(t *testing.T, st store.Store, id string) int {
	t.Helper()
	list, err := st.List(context.Background())
	_, fatal := store.SplitListError(err)
	require.NoError(t, fatal)
	var n int
	for _, in := range list {
		if strings.HasPrefix(in.ID, id+".corrupt.") {
			n++
		}
	}
	return n
}

// TestDamagedFileRepairedMeanwhile: a fresh start over a damaged file does
// not overwrite a good state another process stored meanwhile: the next
// call continues that state.
func TestDamagedFileRepairedMeanwhile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := dirstore.Open(dir, dirstore.Options{})
	require.NoError(t, err)
	exec(t, open(t, "d", session.Options{Store: st}), "x = 1")
	require.NoError(t, os.WriteFile(sessionFile(dir, "d"), []byte("garbage"), 0o600))
	fresh := open(t, "d", session.Options{Store: st, FreshOnCorrupt: true})
	require.NotEmpty(t, fresh.Restored().QuarantinedAs)
	// Another process repairs the session.
	other := open(t, "d", session.Options{Store: st, FreshOnCorrupt: true})
	require.NotEmpty(t, other.Restored().QuarantinedAs)
	exec(t, other, "x = 'repaired'\ny = 1")
	res, err := fresh.Exec(ctx, "x = x + ' and mine'")
	require.NoError(t, err)
	require.Nil(t, res.Err, "the call sees the repaired state")
	got := exec(t, open(t, "d", session.Options{Store: st}), "(x, y)").Value
	assert.Equal(t, object.Tuple{object.Str("repaired and mine"), object.Int(1)}, got)
}

// TestUnreadableWithoutSalvage: a store that cannot hand over an entry it
// cannot read leaves the session failing, even with FreshOnCorrupt:
// nothing is replaced that was not kept aside.
func TestUnreadableWithoutSalvage(t *testing.T) {
	st := unreadableStore{memstore.New(memstore.Options{})}
	_, err := session.Open(context.Background(), "u", session.Options{Store: st, FreshOnCorrupt: true})
	var cse *session.CorruptStateError
	require.ErrorAs(t, err, &cse)
	assert.Empty(t, cse.QuarantinedAs)
	assert.Error(t, cse.KeepErr)
	assert.Contains(t, err.Error(), "left in place")
}

// unreadableStore reports every entry as damaged.
type unreadableStore struct{ store.Store }

func (unreadableStore) Get(context.Context, string) (store.Object, error) {
	return store.Object{}, fmt.Errorf("%w: test damage", store.ErrUnreadable)
}

// TestForeignStateStartsFresh: a blob written for another session id with
// another key, or of another format, is kept aside and the session starts
// empty, saying why.
func TestForeignStateStartsFresh(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	other := session.Options{Store: st, SigningKey: []byte("another signing key")}
	exec(t, open(t, "theirs", other), "secret = 1")
	theirs, err := st.Get(ctx, "theirs")
	require.NoError(t, err)
	for name, data := range map[string][]byte{
		"other-key": theirs.Data,
		"json":      []byte(`{"x": 1}`),
		"empty":     {},
	} {
		t.Run(name, func(t *testing.T) {
			id := "mine-" + name
			_, err := st.Put(ctx, id, data, store.Cond{})
			require.NoError(t, err)
			s := open(t, id, session.Options{Store: st, SigningKey: []byte("my own signing key"), FreshOnCorrupt: true})
			r := s.Restored()
			require.NotEmpty(t, r.QuarantinedAs)
			assert.ErrorIs(t, r.Err, session.ErrCorrupt)
			assert.NotErrorIs(t, r.Err, store.ErrUnreadable)
			assert.Equal(t, object.Bool(false), exec(t, s, "'secret' in locals()").Value)
		})
	}
}

// TestEphemeral: with persistence off nothing is read or written and every
// call starts empty.
func TestEphemeral(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	exec(t, open(t, "e", session.Options{Store: st}), "x = 1")
	before, err := st.Get(ctx, "e")
	require.NoError(t, err)
	s := open(t, "e", session.Options{Store: st, Ephemeral: true, Files: &session.Files{}})
	res := exec(t, s, "y = 2\n'x' in locals()")
	assert.Equal(t, object.Bool(false), res.Value, "the stored state is not read")
	assert.False(t, res.Saved)
	assert.False(t, res.HasState)
	assert.Equal(t, session.NotSavedEphemeral, res.NotSavedReason)
	assert.Equal(t, object.Bool(false), exec(t, s, "'y' in locals()").Value, "the next call starts empty")
	after, err := st.Get(ctx, "e")
	require.NoError(t, err)
	assert.Equal(t, before.Info.Version, after.Info.Version, "nothing is written")
}

// TestRestoreNotice: a fresh start is reported once per load.
func TestRestoreNotice(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	_, err := st.Put(ctx, "n", []byte("garbage"), store.Cond{})
	require.NoError(t, err)
	s := open(t, "n", session.Options{Store: st, FreshOnCorrupt: true})
	r, ok := s.RestoreNotice()
	require.True(t, ok)
	assert.NotEmpty(t, r.QuarantinedAs)
	_, ok = s.RestoreNotice()
	assert.False(t, ok, "reported once")
	exec(t, s, "x = 1")
	_, ok = s.RestoreNotice()
	assert.False(t, ok)
}
