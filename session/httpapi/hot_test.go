package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// countingStore counts the reads of whole entries; while down is set,
// every call fails as a store that does not answer.
type countingStore struct {
	store.Store
	gets atomic.Int64
	down atomic.Bool
}

var errNoAnswer = fmt.Errorf("%w: no answer in time", store.ErrUnavailable)

func (c *countingStore) Stat(ctx context.Context, id string) (store.Info, error) {
	if c.down.Load() {
		return store.Info{}, errNoAnswer
	}
	return c.Store.Stat(ctx, id)
}

func (c *countingStore) Get(ctx context.Context, id string) (store.Object, error) {
	c.gets.Add(1)
	if c.down.Load() {
		return store.Object{}, errNoAnswer
	}
	return c.Store.Get(ctx, id)
}

// A session continued request after request stays open: its state is read
// from the store once, and again only when another instance moved it.
func TestHotSessions(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	a := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	b := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	id := a.run("", "n = 0").SessionID
	st.gets.Store(0)
	for i := range 5 {
		assert.JSONEq(t, itoa(i+1), string(a.run(id, "n += 1\nn").Result))
	}
	assert.Zero(t, st.gets.Load(), "a kept the session open")

	// Two instances taking turns: each continues what the other stored,
	// loading it once per turn.
	st.gets.Store(0)
	for i := range 4 {
		c := a
		if i%2 == 0 {
			c = b
		}
		assert.JSONEq(t, itoa(6+i), string(c.run(id, "n += 1\nn").Result))
	}
	assert.Equal(t, int64(4), st.gets.Load())

	// Deleted: the next request starts empty.
	status, _, _ := a.do("DELETE", "/state/"+id, nil)
	assert.Equal(t, 204, status)
	assert.JSONEq(t, "false", string(a.run(id, "'n' in locals()").Result))
}

// Without hot sessions (a keeper that keeps none) each request loads the
// state; with persistence off, nothing is carried from one request to the
// next, though the keeper keeps sessions open.
func TestHotSessionsOff(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	c := newServer(t, httpapi.Options{Session: session.Options{Store: st}, Keeper: newKeeper(t, st, session.ManagerOptions{MaxLive: -1})}).client("")
	id := c.run("", "n = 0").SessionID
	st.gets.Store(0)
	for range 3 {
		c.run(id, "n += 1")
	}
	assert.Equal(t, int64(3), st.gets.Load())

	off := newServer(t, httpapi.Options{Session: session.Options{Ephemeral: true}}).client("")
	id = off.run("", "n = 0").SessionID
	assert.JSONEq(t, "false", string(off.run(id, "'n' in locals()").Result))
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// A store that stops answering fails a request on a kept session at its
// first call (503), without a second try at opening the session afresh,
// which would keep the client waiting twice as long.
func TestKeptSessionStoreDown(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	c := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	id := c.run("", "n = 0").SessionID
	st.gets.Store(0)
	st.down.Store(true)
	status, _, data := c.do("POST", "/exec", []byte(`{"session_id": "`+id+`", "code": "n"}`))
	wantError(t, "store down", status, data, 503, "store_unavailable")
	assert.Zero(t, st.gets.Load(), "the session was not opened again")
	st.down.Store(false)
	assert.JSONEq(t, "0", string(c.run(id, "n").Result), "the kept session goes on")
}
