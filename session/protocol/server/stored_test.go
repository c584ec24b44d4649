package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// park closes c and waits until s has parked its session.
func (s *testServer) park(t *testing.T, c *client) {
	t.Helper()
	require.NoError(t, c.ws.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool { return s.Connections() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// The fixtures were parked and dumped by the server before sessions became
// session-state blobs (testdata/monty-v1/README.md).
const (
	legacySession = "s-a478e002a9e83f348709ce3b542b7243"
	legacyRecord  = "r-d2e16bb2a0531ceef423e2d78d06d92a"
)

func legacyStore(t *testing.T) (store.Store, string) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	ns := apikey.NamespaceOf(key)
	for id, file := range map[string]string{legacySession: "session.mv1s", legacyRecord: "record.mv1s"} {
		data, err := os.ReadFile("../../../testdata/monty-v1/" + file)
		require.NoError(t, err)
		_, err = st.Put(context.Background(), ns+".monty-v1/"+id, data, store.Cond{})
		require.NoError(t, err)
	}
	return st, ns
}

func TestLegacyBlobsLoad(t *testing.T) {
	st, ns := legacyStore(t)
	s := start(t, st, nil)

	c := s.dial(t)
	ev := c.turn(load([]byte(legacySession)))
	require.NotNil(t, ev.GetOk(), "%v", ev)
	assert.Equal(t, legacySession, string(ev.GetSessionId()))
	assert.Equal(t, object.List{object.Int(1), object.Int(2), object.Int(3)}, value(t, c.turn(feed("x"))))
	assert.Equal(t, object.Int(5), value(t, c.turn(feed("x.append(4)\nf(1)"))))
	s.park(t, c)

	// Parked as a session of the API key now; the legacy entry is gone.
	_, err := st.Get(context.Background(), ns+".monty-v1/"+legacySession)
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = st.Get(context.Background(), apikey.StoreID(ns, legacySession))
	require.NoError(t, err)
	d := s.dial(t)
	require.NotNil(t, d.turn(load([]byte(legacySession))).GetOk())
	assert.Equal(t, object.Int(4), value(t, d.turn(feed("len(x)"))))
	s.park(t, d)

	// A legacy record starts a new session, and stays as it is.
	for range 2 {
		e := s.dial(t)
		ev = e.turn(load([]byte(legacyRecord)))
		require.NotNil(t, ev.GetOk(), "%v", ev)
		assert.True(t, strings.HasPrefix(string(ev.GetSessionId()), "s-"))
		assert.NotEqual(t, legacyRecord, string(ev.GetSessionId()))
		assert.Equal(t, object.List{object.Int(1), object.Int(2)}, value(t, e.turn(feed("x"))))
		value(t, e.turn(feed("x.append(9)")))
		s.park(t, e)
	}
}

func TestDamagedLegacySessionIsKeptAside(t *testing.T) {
	st, ns := legacyStore(t)
	at := ns + ".monty-v1/" + legacySession
	obj, err := st.Get(context.Background(), at)
	require.NoError(t, err)
	damaged := flip(obj.Data, len(obj.Data)-3)
	_, err = st.Put(context.Background(), at, damaged, store.Cond{})
	require.NoError(t, err)
	s := start(t, st, nil)
	ev := s.dial(t).turn(load([]byte(legacySession)))
	msg := ev.GetError().GetException().GetMessage()
	assert.Contains(t, msg, "session "+legacySession+" is corrupt")
	assert.Contains(t, msg, "signature does not verify")
	assertKeptAside(t, st, at, damaged, msg)
}

func TestDamagedParkedSessionIsKeptAside(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := start(t, st, nil)
	c := s.dial(t)
	sid := string(c.session())
	value(t, c.turn(feed("x = 1")))
	s.park(t, c)
	at := apikey.StoreID(apikey.NamespaceOf(key), sid)
	obj, err := st.Get(context.Background(), at)
	require.NoError(t, err)
	for name, damaged := range map[string][]byte{
		"flipped byte": flip(obj.Data, len(obj.Data)/2),
		"truncated":    obj.Data[:len(obj.Data)-40],
		"foreign":      []byte("{\"x\": 1}"),
	} {
		_, err = st.Put(context.Background(), at, damaged, store.Cond{})
		require.NoError(t, err)
		d := s.dial(t)
		ev := d.turn(load([]byte(sid)))
		s.park(t, d)
		msg := ev.GetError().GetException().GetMessage()
		assert.Contains(t, msg, "session "+sid+" is corrupt", name)
		assert.NotContains(t, msg, "retry", name)
		assertKeptAside(t, st, at, damaged, msg)
	}
}

// sharedServers are a monty.v1 server and an HTTP API over one store,
// signing key and keeper of sessions, as `monty serve` runs them. reg,
// when set, has the MCP servers of both (the monty.v1 server's default
// profile); the API names the decisions of the first key "ops".
func sharedServers(t *testing.T, reg *tools.Registry) (*testServer, *httptest.Server) {
	st := memstore.New(memstore.Options{})
	return sharedServersOf(t, reg, newKeeper(t, st))
}

// sharedServersOf are sharedServers of keeper, in its store.
func sharedServersOf(t *testing.T, reg *tools.Registry, keeper *session.Manager) (*testServer, *httptest.Server) {
	st := keeper.Store()
	ws := start(t, st, func(o *server.Options) {
		o.Keeper = keeper
		if reg != nil {
			o.Profiles = map[string]server.Profile{"": {Host: reg.Host(), Tools: reg}}
		}
	})
	h, err := httpapi.New(httpapi.Options{
		Session:        session.Options{Store: st, SigningKey: []byte("signing-key-0123456789"), Engine: testEngine(t)},
		APIKeys:        []string{key, "server-test-key-2"},
		KeyNames:       map[string]string{key: "ops"},
		Functions:      reg,
		Logger:         slog.New(slog.DiscardHandler),
		DisableConsole: true,
		Keeper:         keeper,
	})
	require.NoError(t, err)
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	return ws, api
}

// newKeeper is a keeper of sessions for the surfaces of one process.
func newKeeper(t *testing.T, st store.Store) *session.Manager {
	k := session.NewManager(session.Options{Store: st}, session.ManagerOptions{Warm: -1})
	t.Cleanup(k.Close)
	return k
}

// exec runs code in session sid over the HTTP API and returns the
// response's status and body.
func exec(t *testing.T, api *httptest.Server, apiKey, sid, code string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"code": code, "session_id": sid})
	req, _ := http.NewRequest(http.MethodPost, api.URL+"/exec", bytes.NewReader(body))
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

func get(t *testing.T, api *httptest.Server, path string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, api.URL+path, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func TestOneSessionOnEverySurface(t *testing.T) {
	ws, api := sharedServers(t, nil)

	// Made over monty.v1, continued by /exec.
	c := ws.dial(t)
	ev := c.turn(configure(&pb.Configure{ScriptName: "agent.py"}))
	require.NotNil(t, ev.GetOk())
	sid := string(ev.GetSessionId())
	value(t, c.turn(feed("y = 41\ndef g(n):\n    return n * 2")))
	// While the connection holds it, the session is busy for /exec.
	start := time.Now()
	status, out := exec(t, api, key, sid, "y")
	assert.Equal(t, http.StatusConflict, status, "%v", out)
	assert.Equal(t, "session_busy", out["error"], "%v", out)
	assert.Contains(t, out["message"], "held by a monty.v1 connection")
	assert.Less(t, time.Since(start), 10*time.Second, "a connection's session is not waited for long")
	ws.park(t, c)
	status, info := get(t, api, "/state/"+sid+"/info")
	require.Equal(t, http.StatusOK, status, "%v", info)
	assert.Equal(t, true, info["exists"], "%v", info)
	status, out = exec(t, api, key, sid, "y = y + 1\ng(y)")
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.EqualValues(t, 84, out["result"], "%v", out)

	// ... and loaded over monty.v1 again, with what /exec did.
	d := ws.dial(t)
	ev = d.turn(load([]byte(sid)))
	require.NotNil(t, ev.GetOk(), "%v", ev)
	assert.Equal(t, "agent.py", ev.GetRestoredScriptName(), "the session's configuration outlives /exec")
	assert.Equal(t, object.Int(42), value(t, d.turn(feed("y"))))
	ws.park(t, d)

	// Made by /exec, loaded over monty.v1 by its id, continued there and
	// seen by /exec again.
	status, out = exec(t, api, key, "made-by-exec", "items = ['a']")
	require.Equal(t, http.StatusOK, status, "%v", out)
	e := ws.dial(t)
	ev = e.turn(load([]byte("made-by-exec")))
	require.NotNil(t, ev.GetOk(), "%v", ev)
	assert.Equal(t, "made-by-exec", string(ev.GetSessionId()))
	value(t, e.turn(feed("items.append('b')")))
	ws.park(t, e)
	status, out = exec(t, api, key, "made-by-exec", "items")
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.Equal(t, []any{"a", "b"}, out["result"], "%v", out)

	// Within the same API key's namespace only.
	f, _, err := dial(t, ws.url, http.Header{"X-Api-Key": {"server-test-key-2"}})
	require.NoError(t, err)
	assert.Contains(t, f.turn(load([]byte("made-by-exec"))).GetError().GetException().GetMessage(), "no session or record")
	status, out = exec(t, api, "server-test-key-2", sid, "y")
	require.Equal(t, http.StatusOK, status, "%v", out)
	exc, _ := out["error"].(map[string]any)
	assert.Equal(t, "NameError", exc["type"], "another key's session of that id is another session: %v", out)
}

func TestAFeedParkedMidwayIsContinuedOnlyOverMontyV1(t *testing.T) {
	ws, api := sharedServers(t, nil)
	c := ws.dial(t)
	sid := string(c.session())
	ev := c.turn(feed("z = ask(1) + 1"))
	require.NotNil(t, ev.GetFunctionCall(), "%v", ev)
	ws.park(t, c) // mid-feed: the feed is parked with the session

	status, out := exec(t, api, key, sid, "1")
	assert.Equal(t, http.StatusConflict, status, "%v", out)
	assert.Equal(t, "session_in_feed", out["error"], "%v", out)

	d := ws.dial(t)
	ev = d.turn(load([]byte(sid)))
	require.NotNil(t, ev.GetFunctionCall(), "the load answers with the pending call: %v", ev)
	a, roots, err := protocol.EncodeValues(object.Int(41))
	require.NoError(t, err)
	done := d.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{
		CallId: ev.GetFunctionCall().GetCallId(), Values: a, Result: &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_ReturnValue{ReturnValue: roots[0]}}}}})
	require.NotNil(t, done.GetComplete(), "%v", done)
	ws.park(t, d)
	status, out = exec(t, api, key, sid, "z")
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.EqualValues(t, 42, out["result"], "%v", out)
}
