package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// dropAnswers serves h but drops every answer: the request is done in
// full, then the connection is closed before a byte of the answer is
// sent, as a proxy or a network fault does to a client.
func dropAnswers(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The case: an /exec's answer is lost on its way back; the
// client retries with the same Idempotency-Key on another instance and
// gets the first answer, marked as a replay, and the code ran once.
func TestRetryAfterDroppedAnswer(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := newServer(t, httpapi.Options{Session: session.Options{Store: st}})
	b := newServer(t, httpapi.Options{Session: session.Options{Store: st}})
	b.client("").run("s", "log = []")
	lossy := dropAnswers(t, a.h)

	body, _ := json.Marshal(map[string]any{"session_id": "s", "code": "log.append('once')\nprint('appended')\nlog"})
	req, err := http.NewRequest("POST", lossy.URL+"/exec", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "k-1")
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err, "the answer was dropped")

	c := b.client("")
	status, header, data := c.do("POST", "/exec", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, status, "%s", data)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	_, first, _ := decode(t, status, data)
	assert.JSONEq(t, `["once"]`, string(first.Result))
	assert.Equal(t, "appended\n", first.Stdout)
	assert.True(t, first.StateSaved)

	// Again, quoted as the draft's structured field: the same body.
	status, header, again := c.do("POST", "/exec", body, "Idempotency-Key", `"k-1"`)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(data), string(again))

	resp := c.run("s", "log")
	assert.JSONEq(t, `["once"]`, string(resp.Result), "applied once")
	assert.NotEqual(t, first.StateHash, "")

	// A new request with its own key runs, and its first answer is not
	// a replay.
	status, header, data = c.do("POST", "/exec", body, "Idempotency-Key", "k-2")
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, header.Get("Idempotent-Replayed"))
	_, second, _ := decode(t, status, data)
	assert.JSONEq(t, `["once","once"]`, string(second.Result))
}

// The same key with another request is refused with 422 and runs
// nothing; keys are checked; an exception and a limit replay as they
// were answered; a key without a session_id names the session.
func TestIdempotencyKeyAnswers(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	c := s.client("")
	c.run("s", "n = 0")
	ask := func(code, key string) (int, http.Header, []byte) {
		body, _ := json.Marshal(map[string]any{"session_id": "s", "code": code})
		return c.do("POST", "/exec", body, "Idempotency-Key", key)
	}
	status, _, _ := ask("n += 1\nn", "same")
	require.Equal(t, http.StatusOK, status)
	status, _, data := ask("n += 100\nn", "same")
	wantError(t, "another request", status, data, http.StatusUnprocessableEntity, "idempotency_key_reused")
	assert.JSONEq(t, "1", string(c.run("s", "n").Result))

	for _, bad := range []string{`"unterminated`, "caf\u00e9", "a\tb", strings.Repeat("k", 300)} {
		status, _, data = ask("n", bad)
		wantError(t, "bad key "+bad[:3], status, data, http.StatusBadRequest, "invalid_idempotency_key")
	}

	status, _, raised := ask("n += 1\nraise ValueError('no')", "raises")
	require.Equal(t, http.StatusOK, status)
	status, header, again := ask("n += 1\nraise ValueError('no')", "raises")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(raised), string(again))
	var resp httpapi.ExecResponse
	require.NoError(t, json.Unmarshal(again, &resp))
	require.NotNil(t, resp.Error)
	assert.Equal(t, "ValueError", resp.Error.Type)
	assert.False(t, resp.StateSaved)

	limited, _ := json.Marshal(map[string]any{"session_id": "s", "code": "while True:\n    n += 1", "limits": map[string]any{"duration_ms": 50}})
	status, _, first := c.do("POST", "/exec", limited, "Idempotency-Key", "limited")
	wantError(t, "time limit", status, first, http.StatusUnprocessableEntity, "time_limit")
	status, header, data = c.do("POST", "/exec", limited, "Idempotency-Key", "limited")
	wantError(t, "time limit replayed", status, data, http.StatusUnprocessableEntity, "time_limit")
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(first), string(data))
	assert.JSONEq(t, "1", string(c.run("s", "n").Result), "nothing ran twice")

	// No session_id: the key names the session, so the retry finds it.
	fresh, _ := json.Marshal(map[string]any{"code": "x = 41\nx + 1"})
	status, _, data = c.do("POST", "/exec", fresh, "Idempotency-Key", "new-session")
	require.Equal(t, http.StatusOK, status)
	_, created, _ := decode(t, status, data)
	status, header, data = c.do("POST", "/exec", fresh, "Idempotency-Key", "new-session")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	_, replayed, _ := decode(t, status, data)
	assert.Equal(t, created.SessionID, replayed.SessionID)

	eph := newServer(t, httpapi.Options{Session: session.Options{Ephemeral: true}}).client("")
	status, _, data = eph.do("POST", "/exec", fresh, "Idempotency-Key", "k")
	wantError(t, "ephemeral", status, data, http.StatusBadRequest, "idempotency_unavailable")
}

// A retry while the first request runs is answered 409 with
// Retry-After; once it is done, the retry gets its answer.
func TestIdempotencyKeyInFlight(t *testing.T) {
	gate := agenttest.NewGate(t)
	s := newServer(t, httpapi.Options{Functions: gate.Registry})
	c := s.client("")
	body, _ := json.Marshal(map[string]any{"session_id": "g", "code": "gate()\n'done'"})
	done := make(chan []byte)
	go func() {
		_, _, data := c.do("POST", "/exec", body, "Idempotency-Key", "slow")
		done <- data
	}()
	<-gate.Entered
	status, header, data := c.do("POST", "/exec", body, "Idempotency-Key", "slow")
	wantError(t, "in flight", status, data, http.StatusConflict, "idempotency_key_in_flight")
	assert.Equal(t, "1", header.Get("Retry-After"))
	gate.Release()
	first := <-done
	status, header, data = c.do("POST", "/exec", body, "Idempotency-Key", "slow")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(first), string(data))
}

// A resume retried with its key gets the first resume's answer, where
// without the key it would find the run over.
func TestIdempotentResume(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	c := s.client("")
	status, paused, _ := c.exec(map[string]any{"code": "x = ask()\nx * 2", "session_id": "r", "tools": []map[string]any{{"name": "ask"}}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, httpapi.StatusPaused, paused.Status)
	body, _ := json.Marshal(map[string]any{"results": []map[string]any{{"id": paused.Calls[0].ID, "value": 21}}})
	path := "/runs/" + paused.RunID + "/resume"
	status, _, first := c.do("POST", path, body, "Idempotency-Key", "resume-1")
	require.Equal(t, http.StatusOK, status, "%s", first)
	status, header, again := c.do("POST", path, body, "Idempotency-Key", "resume-1")
	require.Equal(t, http.StatusOK, status, "%s", again)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(first), string(again))
	status, _, data := c.do("POST", path, body)
	wantError(t, "without the key", status, data, http.StatusConflict, "run_not_paused")
}

// An upload retried with its key is stored once: the retry gets the
// first answer, even though the first moved the state past its
// If-Match; the same key with other bytes is refused.
func TestIdempotentUpload(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	c := s.client("")
	c.run("u", "v = 1")
	status, _, blob := c.do("GET", "/state/u", nil)
	require.Equal(t, http.StatusOK, status)
	before := c.run("u", "v = 2")

	status, _, first := c.do("POST", "/state/u", blob, "Idempotency-Key", "up", "If-Match", `"`+before.StateHash+`"`)
	require.Equal(t, http.StatusCreated, status, "%s", first)
	status, header, again := c.do("POST", "/state/u", blob, "Idempotency-Key", "up", "If-Match", `"`+before.StateHash+`"`)
	require.Equal(t, http.StatusCreated, status, "%s", again)
	assert.Equal(t, "true", header.Get("Idempotent-Replayed"))
	assert.JSONEq(t, string(first), string(again))
	assert.JSONEq(t, "1", string(c.run("u", "v").Result), "the uploaded state")

	status, _, data := c.do("POST", "/state/u", append(blob[:len(blob):len(blob)], 0), "Idempotency-Key", "up")
	require.NotEqual(t, http.StatusCreated, status, "%s", data)
	status, _, data = c.do("POST", "/state/u", blob, "Idempotency-Key", "up")
	wantError(t, "other If-Match", status, data, http.StatusUnprocessableEntity, "idempotency_key_reused")
}

// If-Match on /exec runs the code only on the stored state it names ("*":
// any): a session the store lost is refused with 412, never continued as
// an empty one.
func TestExecIfMatch(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	c := s.client("")
	first := c.run("m", "log = [1]")
	body, _ := json.Marshal(map[string]any{"session_id": "m", "code": "log.append(2)\nlog"})
	status, _, data := c.do("POST", "/exec", body, "If-Match", `"`+first.StateHash+`"`)
	require.Equal(t, http.StatusOK, status, "%s", data)
	status, _, data = c.do("POST", "/exec", body, "If-Match", `"`+first.StateHash+`"`)
	wantError(t, "stale hash", status, data, http.StatusPreconditionFailed, "precondition_failed")

	require.NoError(t, s.store.Delete(context.Background(), "public/m")) // the store lost it
	status, _, data = c.do("POST", "/exec", body, "If-Match", "*")
	wantError(t, "lost session", status, data, http.StatusPreconditionFailed, "precondition_failed")
	_, err := s.store.Get(context.Background(), "public/m")
	require.Error(t, err, "nothing was stored in its place")
}

// A streamed request retried with its key gets the stored answer as a
// finished run, marked as a replay; an answer too large to keep is 409
// idempotency_answer_not_kept, the code not run again.
func TestIdempotentReplayEdges(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	c := s.client("")
	req := map[string]any{"session_id": "e", "code": "print('once')\n41 + 1"}
	first := c.streamExec(t, req, "Idempotency-Key", "streamed").rest()
	want := finished(t, first[len(first)-1])
	again := c.streamExec(t, req, "Idempotency-Key", "streamed")
	assert.Equal(t, "true", again.resp.Header.Get("Idempotent-Replayed"))
	evs := again.rest()
	require.Len(t, evs, 2, "RUN_STARTED and RUN_FINISHED, nothing ran")
	got := finished(t, evs[1])
	assert.JSONEq(t, "42", string(got.Result))
	assert.Equal(t, want.Stdout, got.Stdout)
	assert.Equal(t, want.StateHash, got.StateHash)

	c.run("big", "n = 0")
	body, _ := json.Marshal(map[string]any{"session_id": "big", "code": "n += 1\n'x' * 1200000"})
	status, _, data := c.do("POST", "/exec", body, "Idempotency-Key", "huge")
	require.Equal(t, http.StatusOK, status)
	status, _, data = c.do("POST", "/exec", body, "Idempotency-Key", "huge")
	wantError(t, "answer not kept", status, data, http.StatusConflict, "idempotency_answer_not_kept")
	assert.JSONEq(t, "1", string(c.run("big", "n").Result), "not run again")
}

// TestIdempotencyKeyAcrossInstances: two instances (each its own keeper)
// on one store get the same Idempotency-Key at the same moment: the code
// runs once. The second waits on the first's claim in the store, then
// answers with the first's answer, marked as a replay.
func TestIdempotencyKeyAcrossInstances(t *testing.T) {
	gate := agenttest.NewGate(t)
	reg := gate.Registry
	st := memstore.New(memstore.Options{})
	keeperB := session.NewManager(session.Options{Store: st}, session.ManagerOptions{Warm: -1})
	t.Cleanup(keeperB.Close)
	a := newServer(t, httpapi.Options{Functions: reg, Session: session.Options{Store: st}})
	b := newServer(t, httpapi.Options{Functions: reg, Session: session.Options{Store: st}, Keeper: keeperB})
	body, _ := json.Marshal(map[string]any{"session_id": "g", "code": "gate()\n'done'"})
	first := make(chan []byte)
	go func() {
		_, _, data := a.client("").do("POST", "/exec", body, "Idempotency-Key", "raced")
		first <- data
	}()
	<-gate.Entered
	second := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/exec", bytes.NewReader(body))
		req.Header.Set("Idempotency-Key", "raced")
		resp, err := http.DefaultClient.Do(req)
		assert.NoError(t, err)
		second <- resp
	}()
	// The second request waits for the first's claim in the store.
	require.Eventually(t, func() bool { return keeperB.Claims(apikey.StoreID(apikey.Public, "g")) == 1 }, 10*time.Second, time.Millisecond)
	gate.Release()
	want := <-first
	resp := <-second
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	assert.Equal(t, "true", resp.Header.Get(httpapi.HeaderReplayed))
	assert.JSONEq(t, string(want), string(got))
	assert.Equal(t, 1, gate.Calls(), "the code ran once")
}
