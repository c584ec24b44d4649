package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
)

// storedView is the JSON view of session sid as the store holds it now,
// read past the server (nil when nothing is stored).
func storedView(t *testing.T, st store.Store, sid string) map[string]any {
	t.Helper()
	ns := apikey.NamespaceOf(key)
	obj, err := st.Get(context.Background(), apikey.StoreID(ns, sid))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	require.NoError(t, err)
	in, err := session.Inspect(obj.Data, apikey.StateKey([]byte("signing-key-0123456789"), ns, sid))
	require.NoError(t, err)
	var view map[string]any
	require.NoError(t, json.Unmarshal(in.JSON, &view))
	return view
}

// TestEveryTurnIsStoredBeforeItsAnswer: a stored session is in the store
// from its first turn on, and each turn's state before that turn is
// answered, so that nothing a client was told is lost when the instance
// dies; a feed waiting on the client's function is stored waiting, and a
// load elsewhere asks for the function again.
func TestEveryTurnIsStoredBeforeItsAnswer(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := start(t, st, nil)
	c := a.dial(t)
	sid := string(c.session())
	value(t, c.turn(feed("n = 0")))
	assert.EqualValues(t, 0, storedView(t, st, sid)["n"], "stored at its first turn")
	for i := 1; i <= 5; i++ {
		assert.Equal(t, object.Int(i), value(t, c.turn(feed("n += 1\nn"))))
		assert.EqualValues(t, i, storedView(t, st, sid)["n"], "turn %d is stored before it is answered", i)
	}
	// A turn that changes nothing writes nothing.
	id := apikey.StoreID(apikey.NamespaceOf(key), sid)
	before, err := st.Stat(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, object.Int(5), value(t, c.turn(feed("n"))))
	after, err := st.Stat(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, before.Version, after.Version, "a read turn stored the session again")
	ev := c.turn(feed("a = 5\nb = ask(a)\nn = a + b\nn"))
	require.NotNil(t, ev.GetFunctionCall(), "%v", ev)

	// The instance is gone without parking anything (its connection is
	// cut, and nothing it did since its last answer counts): another
	// instance continues from the store.
	_ = c.ws.CloseNow()
	b := start(t, st, nil)
	d := b.dial(t)
	ev = d.turn(load([]byte(sid)))
	require.NotNil(t, ev.GetFunctionCall(), "the feed waits on the function again: %v", ev)
	assert.Equal(t, "ask", ev.GetFunctionCall().GetFunctionName())
	vals, roots, err := protocol.EncodeValues(object.Int(37))
	require.NoError(t, err)
	done := d.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{
		CallId: ev.GetFunctionCall().GetCallId(), Values: vals, Result: &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_ReturnValue{ReturnValue: roots[0]}},
	}}})
	assert.Equal(t, object.Int(42), value(t, done))
	assert.EqualValues(t, 42, storedView(t, st, sid)["n"])
}

// TestParkOnlyStoresAtTheEnd: with ParkOnly (the server's, or a
// profile's) turns are answered before anything is stored; the session is
// stored when its connection ends.
func TestParkOnlyStoresAtTheEnd(t *testing.T) {
	for name, mod := range map[string]func(*server.Options){
		"server":  func(o *server.Options) { o.ParkOnly = true },
		"profile": func(o *server.Options) { o.Profiles = map[string]server.Profile{"": {ParkOnly: true}} },
	} {
		t.Run(name, func(t *testing.T) {
			st := memstore.New(memstore.Options{})
			a := start(t, st, mod)
			c := a.dial(t)
			sid := string(c.session())
			value(t, c.turn(feed("n = 1")))
			assert.Nil(t, storedView(t, st, sid), "nothing stored before the connection ends")
			a.park(t, c)
			assert.EqualValues(t, 1, storedView(t, st, sid)["n"])
		})
	}
}

// TestTurnNotStoredIsNotAnswered: a turn whose state the store refuses is
// not answered with its result: the client is told, the connection
// closes, and the session is continued as of the last turn answered.
func TestTurnNotStoredIsNotAnswered(t *testing.T) {
	st := storetest.NewRefusing(memstore.New(memstore.Options{}))
	a := start(t, st, nil)
	c := a.dial(t)
	sid := string(c.session())
	value(t, c.turn(feed("n = 1")))
	st.Refuse(true)
	ev := c.turn(feed("n = 2\nn"))
	require.NotNil(t, ev.GetError(), "%v", ev)
	msg := ev.GetError().GetException().GetMessage()
	assert.Contains(t, msg, "could not be stored")
	assert.Contains(t, msg, "load_session('"+sid+"')")
	assert.Nil(t, c.next(), "the connection is closed")
	st.Refuse(false)
	d := a.dial(t)
	require.NotNil(t, d.turn(load([]byte(sid))).GetOk())
	assert.Equal(t, object.Int(1), value(t, d.turn(feed("n"))), "as of the last turn answered")

	// A new session whose first turn cannot be stored is not started.
	st.Refuse(true)
	e := a.dial(t)
	e.session()
	ev = e.turn(feed("m = 1"))
	require.NotNil(t, ev.GetError(), "%v", ev)
	assert.Contains(t, ev.GetError().GetException().GetMessage(), "never stored")
}

// TestLostClaimClosesTheConnection: a connection whose claim on its
// session another instance took over (its lease overwritten, as after it
// lapsed) is closed with 1013 and a reason, not dropped.
func TestLostClaimClosesTheConnection(t *testing.T) {
	st := memstore.New(memstore.Options{})
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{Warm: -1, LeaseTTL: 300 * time.Millisecond})
	t.Cleanup(keeper.Close)
	a := start(t, st, func(o *server.Options) { o.Keeper = keeper })
	c := a.dial(t)
	sid := string(c.session())
	value(t, c.turn(feed("n = 1")))
	other, _ := json.Marshal(map[string]any{"token": "u", "holder": "another instance", "host": "b:2", "until": time.Now().Add(time.Minute)})
	_, err := st.Put(context.Background(), session.LeaseID(apikey.StoreID(apikey.NamespaceOf(key), sid)), other, store.Cond{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = c.ws.Read(ctx)
	require.Error(t, err)
	assert.Equal(t, websocket.StatusTryAgainLater, websocket.CloseStatus(err), "%v", err)
	assert.Contains(t, err.Error(), "session claimed elsewhere")
}
