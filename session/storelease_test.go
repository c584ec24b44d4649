package session_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
)

// TestLeaseAcrossInstances: two Managers on one store are two instances:
// a claim on one holds the session against the other, which is told who
// holds it and where, and gets it once it is released.
func TestLeaseAcrossInstances(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	a := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	defer a.Close()
	b := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	defer b.Close()

	held, err := a.Claim(ctx, "ns/s", session.ClaimOptions{Who: "a monty.v1 connection", Long: true})
	require.NoError(t, err)
	_, err = st.Stat(ctx, session.LeaseID("ns/s"))
	require.NoError(t, err, "the claim is in the store")
	assert.True(t, store.IsLease(session.LeaseID("ns/s")))
	assert.False(t, store.IsLease("ns/s"))

	_, err = b.Claim(ctx, "ns/s", session.ClaimOptions{Who: "an HTTP request"})
	require.ErrorIs(t, err, session.ErrBusy)
	var be *session.BusyError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Holder, "a monty.v1 connection on ")
	assert.Zero(t, be.Waited)
	// A long holder is waited for LongHoldWait at the most, whatever the
	// claim asks.
	start := time.Now()
	_, err = b.Claim(ctx, "ns/s", session.ClaimOptions{Wait: -1})
	require.ErrorIs(t, err, session.ErrBusy)
	assert.GreaterOrEqual(t, time.Since(start), session.LongHoldWait)
	assert.Zero(t, b.Claims("ns/s"), "the failed claim left the queue")

	got := make(chan error, 1)
	go func() {
		l, err := b.Claim(ctx, "ns/s", session.ClaimOptions{Who: "a waiter", Wait: time.Minute})
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return b.Claims("ns/s") == 1 }, 5*time.Second, time.Millisecond)
	held.Release()
	require.NoError(t, <-got, "released: the other instance gets it")
	_, err = st.Stat(ctx, session.LeaseID("ns/s"))
	require.ErrorIs(t, err, store.ErrNotFound, "released claims leave nothing in the store")
}

// TestLeaseOfDeadHolder: a lease whose holder died (it is never renewed)
// lapses, and another instance takes the session over then, not before.
func TestLeaseOfDeadHolder(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	lapse := time.Now().Add(300 * time.Millisecond)
	dead, _ := json.Marshal(map[string]any{"token": "t", "holder": "a dead instance", "host": "gone:1", "until": lapse})
	_, err := st.Put(ctx, session.LeaseID("s"), dead, store.Cond{})
	require.NoError(t, err)

	m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	defer m.Close()
	_, err = m.Claim(ctx, "s", session.ClaimOptions{})
	require.ErrorIs(t, err, session.ErrBusy)
	assert.Contains(t, err.Error(), "held by a dead instance on gone:1")
	l, err := m.Claim(ctx, "s", session.ClaimOptions{Wait: 10 * time.Second})
	require.NoError(t, err)
	assert.False(t, time.Now().Before(lapse), "taken only once it lapsed")
	s, err := l.Session(ctx, nil)
	require.NoError(t, err)
	_, err = s.Exec(ctx, "x = 1")
	require.NoError(t, err)
	l.Release()

	// A damaged lease entry holds nothing.
	_, err = st.Put(ctx, session.LeaseID("s"), []byte("not a lease"), store.Cond{})
	require.NoError(t, err)
	l, err = m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err)
	l.Release()
}

// TestLeaseLost: a holder whose lease is taken over (it lapsed while the
// holder could not renew it) is told, and the calls bound to the lease
// are cancelled with ErrLeaseLost.
func TestLeaseLost(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{LeaseTTL: 300 * time.Millisecond})
	defer m.Close()
	l, err := m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err)
	bound, stop := l.Bind(ctx)
	defer stop()
	select {
	case <-l.Lost():
		t.Fatal("lost while renewed")
	case <-time.After(500 * time.Millisecond): // longer than the lease: renewals keep it
	}
	require.NoError(t, l.Err())

	// Another instance's write in its place: the next renewal finds it.
	other, _ := json.Marshal(map[string]any{"token": "u", "holder": "another instance", "host": "b:2", "until": time.Now().Add(time.Minute)})
	_, err = st.Put(ctx, session.LeaseID("s"), other, store.Cond{})
	require.NoError(t, err)
	requireLost(t, l, "the lease's loss was not noticed")
	<-bound.Done()
	require.ErrorIs(t, context.Cause(bound), session.ErrLeaseLost)
	l.Release()
	obj, err := st.Get(ctx, session.LeaseID("s"))
	require.NoError(t, err)
	assert.Equal(t, other, obj.Data, "a lost lease is not removed: it is another's")
}

// TestLeaseLapsesInOutage: a holder that cannot write the store loses its
// lease before it lapses; a claim made while the store refuses writes
// holds in this process (reads need no write), writes its lease once the
// store takes writes, and is lost if another instance's lease got there
// first.
func TestLeaseLapsesInOutage(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewRefusing(memstore.New(memstore.Options{}))
	m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{LeaseTTL: 300 * time.Millisecond})
	defer m.Close()
	l, err := m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err)
	st.Refuse(true)
	requireLost(t, l, "a lease that could not be renewed did not lapse")
	assert.Contains(t, l.Err().Error(), "lapsed while the store could not be written")
	l.Release()

	l, err = m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err, "the store refuses writes: the claim is this process's")
	st.Refuse(false)
	require.Eventually(t, func() bool {
		_, err := st.Stat(ctx, session.LeaseID("s"))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "once the store takes writes, the claim's lease is written")
	require.NoError(t, l.Err())
	l.Release()

	// Another instance claimed the session while this one could not
	// write: this one's claim is lost.
	st.Refuse(true)
	l, err = m.Claim(ctx, "s", session.ClaimOptions{})
	require.NoError(t, err)
	other, _ := json.Marshal(map[string]any{"token": "u", "holder": "another instance", "host": "b:2", "until": time.Now().Add(time.Minute)})
	_, err = st.Store.Put(ctx, session.LeaseID("s"), other, store.Cond{})
	require.NoError(t, err)
	st.Refuse(false)
	requireLost(t, l, "a claim whose place another instance took was not lost")
	l.Release()
}

// TestManagerExecClaims: Manager.Exec takes the claim every surface
// takes, so it fails at once while another caller holds the session.
func TestManagerExecClaims(t *testing.T) {
	ctx := context.Background()
	m := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	defer m.Close()
	res, err := m.Exec(ctx, "s", "n = 41\nn + 1")
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), res.Value)
	l, err := m.Claim(ctx, "s", session.ClaimOptions{Who: "a test"})
	require.NoError(t, err)
	_, err = m.Exec(ctx, "s", "n")
	require.ErrorIs(t, err, session.ErrBusy)
	assert.Contains(t, err.Error(), "held by a test")
	l.Release()
}

// requireLost waits up to 5 s for l's claim to be lost, and fails t with
// msg when it is not.
func requireLost(t *testing.T, l *session.Lease, msg string) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal(msg)
	}
	require.ErrorIs(t, l.Err(), session.ErrLeaseLost)
}
