package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestManagerStress runs many goroutines against more sessions than may be
// live at once: no update is lost, busy calls fail fast, eviction persists.
func TestManagerStress(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{MaxLive: 4})
	defer m.Close()
	const sessions, workers, calls = 8, 12, 6
	var ok [sessions]atomic.Int64
	for i := range sessions {
		_, err := m.Exec(ctx, fmt.Sprintf("s%d", i), "n = 0")
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				i := (w + c) % sessions
				res, err := m.Exec(ctx, fmt.Sprintf("s%d", i), "n += 1")
				switch {
				case err == nil && res.Err == nil:
					ok[i].Add(1)
				case errors.Is(err, session.ErrBusy), errors.Is(err, session.ErrTooManySessions):
				default:
					t.Errorf("session s%d: %v %v", i, err, res)
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, m.Live(), 4)
	for i := range sessions {
		res, err := m.Exec(ctx, fmt.Sprintf("s%d", i), "n")
		require.NoError(t, err)
		assert.Equal(t, object.Int(ok[i].Load()), res.Value, "session s%d", i)
	}
}

func TestManagerIdleTimeout(t *testing.T) {
	ctx := context.Background()
	m := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})},
		session.ManagerOptions{IdleTimeout: 100 * time.Millisecond})
	defer m.Close()
	_, err := m.Exec(ctx, "idle", "x = 'kept'")
	require.NoError(t, err)
	assert.Equal(t, 1, m.Live())
	require.Eventually(t, func() bool { return m.Live() == 0 }, 3*time.Second, 20*time.Millisecond)
	res, err := m.Exec(ctx, "idle", "x")
	require.NoError(t, err)
	assert.Equal(t, object.Str("kept"), res.Value, "state survives the close")
}

// TestManagerKeys: with ManagerOptions.Keys each session is signed with
// its own key, and loads only with it (or a verify key it gives).
func TestManagerKeys(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	keyOf := func(id string) []byte { return []byte("key-of-session-" + id) }
	legacy := []byte("the-legacy-key-0123")
	var asked sync.Map
	keys := func(id string) ([]byte, [][]byte) {
		asked.Store(id, true)
		return keyOf(id), [][]byte{legacy}
	}
	m := session.NewManager(session.Options{Store: st, SigningKey: []byte("the-options-key-0123")}, session.ManagerOptions{Keys: keys})
	for _, id := range []string{"a", "b"} {
		_, err := m.Exec(ctx, id, "n = '"+id+"'")
		require.NoError(t, err)
		_, ok := asked.Load(id)
		assert.True(t, ok, "Keys was asked for %s", id)
	}
	m.Close()
	for _, id := range []string{"a", "b"} {
		obj, err := st.Get(ctx, id)
		require.NoError(t, err)
		_, err = session.Inspect(obj.Data, keyOf(id))
		require.NoError(t, err, "%s is signed with its own key", id)
		_, err = session.Inspect(obj.Data, []byte("the-options-key-0123"))
		assert.ErrorIs(t, err, session.ErrCorrupt, "%s is not signed with the options' key", id)
	}
	b, err := st.Get(ctx, "b")
	require.NoError(t, err)
	_, err = session.Inspect(b.Data, keyOf("a"))
	assert.ErrorIs(t, err, session.ErrCorrupt, "one session's key does not verify another's blob")

	// Reopened with the same keys, each continues.
	m = session.NewManager(session.Options{Store: st}, session.ManagerOptions{Keys: keys})
	res, err := m.Exec(ctx, "a", "n")
	require.NoError(t, err)
	assert.Equal(t, object.Str("a"), res.Value)
	m.Close()

	// A blob signed with a verify key loads (and is signed with the
	// session's key when saved); one signed with no key it gives does not.
	legacyOnly := session.NewManager(session.Options{Store: st, SigningKey: legacy}, session.ManagerOptions{})
	_, err = legacyOnly.Exec(ctx, "c", "n = 'c'")
	require.NoError(t, err)
	legacyOnly.Close()
	m = session.NewManager(session.Options{Store: st}, session.ManagerOptions{Keys: keys})
	defer m.Close()
	res, err = m.Exec(ctx, "c", "n += '!'\nn")
	require.NoError(t, err)
	assert.Equal(t, object.Str("c!"), res.Value)
	c, err := st.Get(ctx, "c")
	require.NoError(t, err)
	_, err = session.Inspect(c.Data, keyOf("c"))
	assert.NoError(t, err, "re-signed with the session's key")

	other := session.NewManager(session.Options{Store: st}, session.ManagerOptions{Keys: func(id string) ([]byte, [][]byte) {
		return []byte("another-key-entirely"), nil
	}})
	defer other.Close()
	_, err = other.Exec(ctx, "a", "n")
	assert.ErrorIs(t, err, session.ErrCorrupt, "keys that do not verify the blob: it does not load")
}

// TestClaims: a claim holds its session against every other claim, whose
// busy policy says whether it fails at once (naming the holder) or waits
// in a bounded queue; a waiter gets the session as its holder left it.
func TestClaims(t *testing.T) {
	ctx := context.Background()
	m := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{MaxWaiting: 1})
	defer m.Close()
	held, err := m.Claim(ctx, "s", session.ClaimOptions{Who: "a monty.v1 connection"})
	require.NoError(t, err)
	s, err := held.Session(ctx, nil)
	require.NoError(t, err)
	_, err = s.Exec(ctx, "n = 1")
	require.NoError(t, err)

	_, err = m.Claim(ctx, "s", session.ClaimOptions{Who: "an HTTP request"})
	require.ErrorIs(t, err, session.ErrBusy)
	assert.Contains(t, err.Error(), "held by a monty.v1 connection")
	_, err = m.Claim(ctx, "s", session.ClaimOptions{Wait: 20 * time.Millisecond})
	require.ErrorIs(t, err, session.ErrBusy)
	assert.Contains(t, err.Error(), "after waiting 20ms")
	var waited *session.BusyError
	require.ErrorAs(t, err, &waited)
	assert.Equal(t, 20*time.Millisecond, waited.Waited)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.Claim(cctx, "s", session.ClaimOptions{Wait: -1})
	require.ErrorIs(t, err, context.Canceled)

	got := make(chan *session.Lease)
	go func() {
		l, err := m.Claim(ctx, "s", session.ClaimOptions{Who: "a waiter", Wait: -1})
		assert.NoError(t, err)
		got <- l
	}()
	require.Eventually(t, func() bool { return m.Claims("s") == 2 }, 5*time.Second, time.Millisecond)
	// The queue is full with the waiter in it.
	_, err = m.Claim(ctx, "s", session.ClaimOptions{Wait: -1})
	require.ErrorIs(t, err, session.ErrBusy)
	var be *session.BusyError
	require.ErrorAs(t, err, &be)
	assert.True(t, be.QueueFull)
	assert.Equal(t, "a monty.v1 connection", be.Holder)
	held.Release()
	l := <-got
	s, err = l.Session(ctx, nil)
	require.NoError(t, err)
	res, err := s.Exec(ctx, "n + 1")
	require.NoError(t, err)
	assert.Equal(t, object.Int(2), res.Value)
	l.Forget()
	assert.Zero(t, m.Live(), "forgotten while claimed")
	l.Release()
	l.Release() // once
	other, err := m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err, "free again")
	other.Release()
	assert.Zero(t, m.Claims("s"))
}

// TestKeepNone: a Manager that keeps no session closes each at the end of
// its claim.
func TestKeepNone(t *testing.T) {
	ctx := context.Background()
	m := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{MaxLive: -1})
	defer m.Close()
	for i, code := range []string{"n = 1\nn", "n += 1\nn"} {
		l, err := m.Claim(ctx, "s", session.ClaimOptions{})
		require.NoError(t, err)
		s, err := l.Session(ctx, nil)
		require.NoError(t, err)
		res, err := s.Exec(ctx, code)
		require.NoError(t, err)
		assert.Equal(t, object.Int(i+1), res.Value, "the state is stored")
		l.Release()
		assert.Zero(t, m.Live())
	}
}

// TestLeaseKeepsTheDriven: a driver's session is kept by its claim, and
// goes with it: the next claim of the session starts with none.
func TestLeaseKeepsTheDriven(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	defer m.Close()
	var none *session.Lease
	assert.Nil(t, none.Driven())
	l, err := m.Claim(ctx, "s", session.ClaimOptions{Long: true})
	require.NoError(t, err)
	assert.Nil(t, l.Driven())
	d, err := session.NewDriven(ctx, "s", session.Options{Store: st})
	require.NoError(t, err)
	l.Keep(d)
	assert.Same(t, d, l.Driven())
	l.Release()
	assert.Nil(t, l.Driven(), "released with the claim")
	next, err := m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err)
	defer next.Release()
	assert.Nil(t, next.Driven())
}
