package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
)

func open(t *testing.T, id string, opts session.Options) *session.Session {
	t.Helper()
	s, err := session.Open(context.Background(), id, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func exec(t *testing.T, s *session.Session, code string) *session.Result {
	t.Helper()
	res, err := s.Exec(context.Background(), code)
	require.NoError(t, err)
	return res
}

func TestFullFidelityAcrossReopen(t *testing.T) {
	st := memstore.New(memstore.Options{})
	opts := session.Options{Store: st}
	s := open(t, "agent-1", opts)
	res := exec(t, s, `
import dataclasses
@dataclasses.dataclass
class Point:
    x: int
    y: int
    def norm1(self):
        return abs(self.x) + abs(self.y)

def make_counter():
    n = 0
    def bump():
        nonlocal n
        n += 1
        return n
    return bump

counter = make_counter()
counter()
p = Point(3, -4)
data = {'nums': [1, 2, 3]}
`)
	require.Nil(t, res.Err)
	assert.True(t, res.Saved)
	assert.True(t, res.HasState)
	assert.Len(t, res.StateHash, 64)
	require.NoError(t, s.Close(context.Background()))

	// Another session object (as another process would) continues it.
	s2 := open(t, "agent-1", opts)
	assert.True(t, s2.Restored().Found)
	res = exec(t, s2, "(counter(), p.norm1(), Point(1, 1).norm1(), data['nums'][-1])")
	require.Nil(t, res.Err)
	assert.Equal(t, object.Tuple{object.Int(2), object.Int(7), object.Int(2), object.Int(3)}, res.Value)
	assert.Equal(t, map[string]any{"data": map[string]any{"nums": []any{json.Number("1"), json.Number("2"), json.Number("3")}}}, s2.State())
	assert.ElementsMatch(t, []string{"Point", "counter", "data", "dataclasses", "make_counter", "p"}, s2.Globals())
}

func TestTransactionalByDefault(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "tx", session.Options{Store: st})
	exec(t, s, "x = 10\nitems = [1]")
	before, err := st.Get(context.Background(), "tx")
	require.NoError(t, err)

	res := exec(t, s, "x = 99\nitems.append(2)\n1 / 0")
	require.NotNil(t, res.Err)
	assert.Equal(t, "ZeroDivisionError", res.Err.Type)
	assert.False(t, res.Saved)
	after, err := st.Get(context.Background(), "tx")
	require.NoError(t, err)
	assert.Equal(t, before.Data, after.Data, "stored state untouched")

	res = exec(t, s, "(x, items)")
	assert.Equal(t, object.Tuple{object.Int(10), object.List{object.Int(1)}}, res.Value, "live interpreter rolled back too")

	// Capture-on-error keeps what the failing call did.
	c := open(t, "capture", session.Options{Store: st, CaptureOnError: true})
	exec(t, c, "x = 1")
	res = exec(t, c, "x = 2\nraise ValueError('keep')")
	require.NotNil(t, res.Err)
	assert.True(t, res.Saved)
	assert.Equal(t, object.Int(2), exec(t, c, "x").Value)
}

func TestLimitErrorsRollBack(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "limits", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 8 << 20, MaxOutput: 1 << 20}})
	exec(t, s, "keep = 'yes'")
	res := exec(t, s, "keep = 'no'\nx = []\nwhile True:\n    x.append('a' * 1000)")
	require.NotNil(t, res.Err)
	assert.ErrorIs(t, res.Err, runtime.ErrMemoryLimit)
	assert.Equal(t, object.Str("yes"), exec(t, s, "keep").Value)
}

// TestCancelledCallRollsBack cancels a call mid-run (a deadline, then an
// explicit cancel) and checks that the session is as before and usable.
func TestCancelledCallRollsBack(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "cancel", session.Options{Store: st})
	exec(t, s, "x = 1\ndef f():\n    return x + 1")
	for _, stop := range []func(context.Context) (context.Context, context.CancelFunc){
		func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 100*time.Millisecond)
		},
		func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		},
	} {
		ctx, cancel := stop(context.Background())
		_, err := s.Exec(ctx, "x = 2\nwhile True:\n    pass")
		cancel()
		require.ErrorIs(t, err, runtime.ErrCancelled)
		assert.Equal(t, object.Int(2), exec(t, s, "f()").Value)
	}
	assert.Equal(t, object.Int(3), exec(t, s, "x += 1\nf()").Value)
}

func TestSizeCap(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "cap", session.Options{Store: st, MaxStateSize: 64 << 10, NoCompression: true})
	exec(t, s, "small = 1")
	before, _ := st.Get(context.Background(), "cap")
	res := exec(t, s, "big = 'x' * 200000\nprint('done')\nlen(big)")
	assert.Equal(t, object.Int(200000), res.Value)
	assert.Equal(t, "done\n", res.Output)
	assert.False(t, res.Saved)
	assert.Contains(t, res.NotSavedReason, "over the 65536-byte limit")
	after, _ := st.Get(context.Background(), "cap")
	assert.Equal(t, before.Data, after.Data)
	assert.Equal(t, int64(len(before.Data)), res.StateSize)
}

func TestCorruptTruncatedTamperedBlobs(t *testing.T) {
	ctx := context.Background()
	key := []byte("test-signing-key")
	st := memstore.New(memstore.Options{})
	s := open(t, "victim", session.Options{Store: st, SigningKey: key})
	exec(t, s, "x = 1")
	good, err := st.Get(ctx, "victim")
	require.NoError(t, err)

	tampered := append([]byte{}, good.Data...)
	tampered[len(tampered)/2] ^= 1
	unsigned := session.Options{Store: memstore.New(memstore.Options{})}
	us := open(t, "u", unsigned)
	exec(t, us, "x = 1")
	unsignedBlob, _ := unsigned.Store.Get(ctx, "u")

	for name, data := range map[string][]byte{
		"corrupted": tampered,
		"truncated": good.Data[:len(good.Data)-40],
		"foreign":   []byte(`{"x": 1}`),
		"unsigned":  unsignedBlob.Data,
	} {
		t.Run(name, func(t *testing.T) {
			id := "bad-" + name
			_, err := st.Put(ctx, id, data, store.Cond{})
			require.NoError(t, err)
			_, err = session.Open(ctx, id, session.Options{Store: st, SigningKey: key})
			require.ErrorIs(t, err, session.ErrCorrupt)
			assert.Contains(t, err.Error(), "kept as")
			// The original is untouched and a copy was kept aside.
			got, err := st.Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, data, got.Data)
			assert.Equal(t, 1, corruptCopies(t, st, id))
			// Meeting the same blob again keeps no second copy.
			_, err = session.Open(ctx, id, session.Options{Store: st, SigningKey: key})
			require.ErrorIs(t, err, session.ErrCorrupt)
			assert.Equal(t, 1, corruptCopies(t, st, id))

			// Asked to, the session starts fresh (the copy stays).
			fresh, err := session.Open(ctx, id, session.Options{Store: st, SigningKey: key, FreshOnCorrupt: true})
			require.NoError(t, err)
			defer fresh.Close(ctx)
			assert.NotEmpty(t, fresh.Restored().QuarantinedAs)
			res := exec(t, fresh, "y = 2\ny")
			assert.Equal(t, object.Int(2), res.Value)
			assert.True(t, res.Saved)
		})
	}
}

func corruptCopies(t *testing.T, st store.Store, id string) int {
	t.Helper()
	list, err := st.List(context.Background())
	require.NoError(t, err)
	var copies int
	for _, in := range list {
		if strings.HasPrefix(in.ID, id+".corrupt.") {
			copies++
		}
	}
	return copies
}

// cancelAfterGet is a store whose Get cancels the caller's context once the
// blob is fetched, so that the restore runs cancelled.
type cancelAfterGet struct {
	store.Store
	cancel context.CancelFunc
}

func (c cancelAfterGet) Get(ctx context.Context, id string) (store.Object, error) {
	obj, err := c.Store.Get(ctx, id)
	c.cancel()
	return obj, err
}

// TestCancelledLoadIsNotCorruption cancels the context while a good blob is
// being restored: the open fails with the context's error and the blob is
// not taken for a damaged one.
func TestCancelledLoadIsNotCorruption(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "good", session.Options{Store: st})
	exec(t, s, "x = [1, 2, 3]")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := session.Open(ctx, "good", session.Options{Store: cancelAfterGet{st, cancel}})
	require.Error(t, err)
	assert.NotErrorIs(t, err, session.ErrCorrupt)
	assert.Equal(t, 0, corruptCopies(t, st, "good"))
	again := open(t, "good", session.Options{Store: st})
	assert.Equal(t, object.Int(3), exec(t, again, "len(x)").Value)
}

// TestUnsavedCallRollsBack checks that a call whose state could not be
// stored (the store is down, or the state is over the size cap) leaves the
// live session as stored, so a later call cannot persist its changes.
func TestUnsavedCallRollsBack(t *testing.T) {
	st := storetest.NewRefusing(memstore.New(memstore.Options{}))
	s := open(t, "outage", session.Options{Store: st, MaxStateSize: 64 << 10})
	exec(t, s, "n = 0")
	st.Refuse(true)
	_, err := s.Exec(context.Background(), "n += 1")
	require.ErrorIs(t, err, store.ErrUnavailable)
	st.Refuse(false)
	assert.Equal(t, object.Int(1), exec(t, s, "n += 1\nn").Value, "the failed call's increment must not survive")

	// Random floats: the dump does not compress below the cap (and the
	// JSON view leaves out what is over its budget).
	res := exec(t, s, "import random\nbig = [random.random() for i in range(20000)]\nn += 10\nlen(big)")
	assert.Equal(t, object.Int(20000), res.Value)
	assert.False(t, res.Saved)
	assert.Equal(t, object.Int(1), exec(t, s, "n").Value)
	res, err = s.Exec(context.Background(), "big")
	require.NoError(t, err)
	require.NotNil(t, res.Err)
	assert.Equal(t, "NameError", res.Err.Type)
}

// TestLargeGlobalUnderMemoryLimit keeps a value whose JSON text alone is
// about the size of the memory limit: computing the JSON view must not fail
// the save.
func TestLargeGlobalUnderMemoryLimit(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "large", session.Options{Store: st, Limits: runtime.Limits{MaxMemory: 16 << 20}})
	res := exec(t, s, "x = 'a' * 5000000\nlen(x)")
	require.Nil(t, res.Err)
	assert.True(t, res.Saved)
	assert.Equal(t, object.Int(5000000), exec(t, s, "len(x)").Value)
	assert.Len(t, s.State()["x"], 5000000)
}

// Two sessions of one id: each call continues what is stored (b sees a's
// update), and a write that lands while a call runs makes that call's save
// fail with a conflict instead of losing the other update.
func TestConflictBetweenWriters(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := open(t, "shared", session.Options{Store: st})
	exec(t, a, "n = 0")
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"meanwhile": {Func: func(ctx context.Context, _ []object.Value, _ []object.Pair) (object.Value, error) {
			res, err := a.Exec(ctx, "n += 1")
			if err == nil && res.Err != nil {
				err = res.Err
			}
			return object.None{}, err
		}},
	}}
	b := open(t, "shared", session.Options{Store: st, Host: host})
	exec(t, a, "n += 1")
	assert.Equal(t, object.Int(11), exec(t, b, "n += 10\nn").Value, "b continues a's update")
	_, err := b.Exec(context.Background(), "n += 100\nmeanwhile()")
	require.ErrorIs(t, err, store.ErrConflict, "a stored while b's call ran")
	// Nothing was lost: a's increment is stored, b's call is not, and b
	// continues from what is stored.
	assert.Equal(t, object.Int(12), exec(t, b, "n").Value)
}

func TestBusy(t *testing.T) {
	st := memstore.New(memstore.Options{})
	block := make(chan struct{})
	started := make(chan struct{})
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"wait": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			close(started)
			<-block
			return object.None{}, nil
		}},
	}}
	s := open(t, "busy", session.Options{Store: st, Host: host})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = s.Exec(context.Background(), "wait()\nx = 1")
	}()
	<-started
	_, err := s.Exec(context.Background(), "x = 2")
	require.ErrorIs(t, err, session.ErrBusy)
	close(block)
	wg.Wait()
	assert.Equal(t, object.Int(1), exec(t, s, "x").Value)
}

func TestClear(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "clear", session.Options{Store: st})
	exec(t, s, "x = 1")
	require.NoError(t, s.Clear(context.Background()))
	res := exec(t, s, "x")
	require.NotNil(t, res.Err)
	assert.Equal(t, "NameError", res.Err.Type)
	assert.Empty(t, s.State())

	exec(t, s, "y = 2")
	require.NoError(t, s.Close(context.Background()))
	require.ErrorIs(t, s.Clear(context.Background()), session.ErrClosed)
	_, err := st.Get(context.Background(), "clear")
	require.NoError(t, err, "Clear of a closed session must not delete its state")
}

// The JSON-only mode follows seed 000's session design, case by case.
func TestJSONOnlySeedCases(t *testing.T) {
	newSession := func(t *testing.T, id string) *session.Session {
		return open(t, id, session.Options{Store: memstore.New(memstore.Options{}), JSONOnly: true})
	}
	t.Run("set and read variable", func(t *testing.T) {
		s := newSession(t, "s")
		exec(t, s, "x = 42")
		assert.Equal(t, object.Int(43), exec(t, s, "x + 1").Value)
	})
	t.Run("multiple types persist", func(t *testing.T) {
		s := newSession(t, "s")
		exec(t, s, `a = 1; b = "hello"; c = [1,2]; d = {"k": "v"}; e = True; f = None`)
		assert.Equal(t, map[string]any{"a": json.Number("1"), "b": "hello", "c": []any{json.Number("1"), json.Number("2")},
			"d": map[string]any{"k": "v"}, "e": true, "f": nil}, s.State())
	})
	t.Run("non-serializable silently dropped", func(t *testing.T) {
		s := newSession(t, "s")
		exec(t, s, "import math; x = 42\ndef f(): return 1")
		assert.Equal(t, map[string]any{"x": json.Number("42")}, s.State())
		res := exec(t, s, "f()")
		require.NotNil(t, res.Err)
		assert.Equal(t, "NameError", res.Err.Type)
	})
	t.Run("error preserves previous state", func(t *testing.T) {
		s := newSession(t, "s")
		exec(t, s, "x = 10")
		require.NotNil(t, exec(t, s, "1/0").Err)
		assert.Equal(t, object.Int(10), exec(t, s, "x").Value)
	})
	t.Run("clearState resets", func(t *testing.T) {
		s := newSession(t, "s")
		exec(t, s, "x = 1")
		require.NoError(t, s.Clear(context.Background()))
		assert.Equal(t, "NameError", exec(t, s, "x").Err.Type)
	})
	t.Run("state isolated between sessions", func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		a := open(t, "a", session.Options{Store: st, JSONOnly: true})
		b := open(t, "b", session.Options{Store: st, JSONOnly: true})
		exec(t, a, "x = 1")
		assert.Equal(t, "NameError", exec(t, b, "x").Err.Type)
	})
	t.Run("works with external functions", func(t *testing.T) {
		host := &runtime.Host{Functions: map[string]runtime.Function{
			"fetch": {Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
				return object.Str("got " + string(args[0].(object.Str))), nil
			}},
		}}
		s := open(t, "s", session.Options{Store: memstore.New(memstore.Options{}), JSONOnly: true, Host: host})
		exec(t, s, `result = fetch("url")`)
		assert.Equal(t, object.Str("got url"), exec(t, s, "result").Value)
	})
	t.Run("dunder variables excluded from state", func(t *testing.T) {
		s := newSession(t, "s")
		exec(t, s, "__private = 1; _also_private = 2; public = 3")
		assert.Equal(t, map[string]any{"public": json.Number("3")}, s.State())
	})
	t.Run("empty state on first run", func(t *testing.T) {
		s := newSession(t, "s")
		assert.Empty(t, s.State())
		assert.Equal(t, object.Int(2), exec(t, s, "1 + 1").Value)
	})
	t.Run("large state round-trip", func(t *testing.T) {
		s := newSession(t, "s")
		var code strings.Builder
		for i := range 100 {
			fmt.Fprintf(&code, "v%d = %d\n", i, i*i)
		}
		exec(t, s, code.String())
		assert.Len(t, s.State(), 100)
		assert.Equal(t, object.Int(99*99), exec(t, s, "v99").Value)
	})
	t.Run("concurrent sessions", func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		a := open(t, "a", session.Options{Store: st, JSONOnly: true})
		b := open(t, "b", session.Options{Store: st, JSONOnly: true})
		var wg sync.WaitGroup
		for i, s := range []*session.Session{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Exec(context.Background(), fmt.Sprintf("x = %d", i+1))
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		assert.Equal(t, object.Int(1), exec(t, a, "x").Value)
		assert.Equal(t, object.Int(2), exec(t, b, "x").Value)
	})
}
