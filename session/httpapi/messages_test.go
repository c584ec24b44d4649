package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// namespace is the store prefix of an API key's sessions: what no answer
// may show.
func namespace(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(sum[:12])
}

// refusal checks that a run request is refused with status and code the
// same way as JSON and as an event stream (a JSON answer before any
// frame), that its message is exactly want, and that no answer shows the
// API key's namespace.
func refusal(t *testing.T, c *client, path string, body []byte, status int, code, want string) {
	t.Helper()
	gotStatus, _, data := c.do("POST", path, body)
	wantError(t, path, gotStatus, data, status, code)
	var e httpapi.ErrorResponse
	require.NoError(t, json.Unmarshal(data, &e))
	assert.Equal(t, want, e.Message)
	assert.NotContains(t, string(data), namespace(c.key))

	streamStatus, hdr, streamed := c.do("POST", path, body, "Accept", "text/event-stream")
	assert.Equal(t, status, streamStatus, "streamed: %s", streamed)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"), "streamed: no frame before the refusal")
	assert.JSONEq(t, string(data), string(streamed), "the same answer, streamed or not")
}

// TestRunErrorMessages: the run endpoints' refusals name the session and
// the run by the ids the client sent and got (session_id, run_id), never
// by the store's key or the API key's namespace, and answer a stream
// with the JSON answer's status and body.
func TestRunErrorMessages(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"alice"}})
	c := srv.client("alice")
	tools := []map[string]any{{"name": "ask"}}
	body, _ := json.Marshal(map[string]any{"code": "x = ask('q')\nx", "session_id": "trip", "tools": tools})
	status, _, data := c.do("POST", "/exec", body)
	p := pausedAnswer(t, status, data)

	refusal(t, c, "/exec", []byte(`{"code": "1", "session_id": "trip"}`), http.StatusConflict, "run_paused", fmt.Sprintf(
		`session "trip" has a run paused at client tool calls, and runs nothing else until it is resumed with POST /runs/%s/resume (run_id %q) or expires`, p.RunID, p.RunID))
	refusal(t, c, "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": "99", "value": 1}), http.StatusBadRequest, "invalid_results", fmt.Sprintf(
		`the results do not answer the calls of run %q: "99" is not a call of this run; answer the calls the run's answer lists (calls[].id), and a blocking call alone`, p.RunID))

	status, _, data = c.do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "value": 1}))
	require.Equal(t, http.StatusOK, status, string(data))
	refusal(t, c, "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "value": 1}), http.StatusConflict, "run_not_paused", fmt.Sprintf(
		`session "trip" has no paused run %q: it was resumed already (a run is resumed once: its next pause has a new run_id), abandoned after it expired, or never made`, p.RunID))

	// A run that outlived its time to live (1ns: expired as it is stored).
	expiring := newServer(t, httpapi.Options{APIKeys: []string{"alice"}, RunTTL: time.Nanosecond}).client("alice")
	body, _ = json.Marshal(map[string]any{"code": "x = ask('q')\nx", "session_id": "late", "tools": tools})
	status, _, data = expiring.do("POST", "/exec", body)
	p = pausedAnswer(t, status, data)
	refusal(t, expiring, "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "value": 1}), http.StatusGone, "run_expired", fmt.Sprintf(
		`run %q of session "late" waited longer than its time to live and has expired; the session's next /exec abandons it`, p.RunID))
}

// failingStore fails every read and write with an error that names a
// host path and the store id, as a store's own errors do.
type failingStore struct {
	store.Store
	kind error // store.ErrUnavailable, store.ErrConflict, ...
}

const hostPath = "/srv/monty-secret/sessions"

func (s failingStore) fail(id string) error {
	return fmt.Errorf("%w: dirstore: open %s/%s.session: input/output error", s.kind, hostPath, id)
}

func (s failingStore) Get(_ context.Context, id string) (store.Object, error) {
	return store.Object{}, s.fail(id)
}

func (s failingStore) Stat(_ context.Context, id string) (store.Info, error) {
	return store.Info{}, s.fail(id)
}

func (s failingStore) Put(_ context.Context, id string, _ []byte, _ store.Cond) (store.Info, error) {
	return store.Info{}, s.fail(id)
}

// TestStoreErrorMessages: a store's failures reach the client as their
// code and a message of the API's own, without the store's wording (host
// paths, store ids, the API key's namespace), on every endpoint.
func TestStoreErrorMessages(t *testing.T) {
	for _, c := range []struct {
		kind   error
		status int
		code   string
	}{
		{store.ErrUnavailable, http.StatusServiceUnavailable, "store_unavailable"},
		{store.ErrConflict, http.StatusConflict, "conflict"},
	} {
		t.Run(c.code, func(t *testing.T) {
			st := failingStore{Store: memstore.New(memstore.Options{}), kind: c.kind}
			cl := newServer(t, httpapi.Options{Session: session.Options{Store: st}, APIKeys: []string{"alice"}}).client("alice")
			for _, r := range []struct{ method, path, body string }{
				{"POST", "/exec", `{"code": "1", "session_id": "s"}`},
				{"POST", "/check", `{"code": "1", "session_id": "s"}`},
				{"GET", "/state/s", ""},
				{"GET", "/state/s/info", ""},
				{"GET", "/state/s/files", ""},
				{"GET", "/state/s/files/a.txt", ""},
				{"PUT", "/state/s/files/a.txt", "x"},
			} {
				status, _, data := cl.do(r.method, r.path, []byte(r.body))
				what := r.method + " " + r.path
				wantError(t, what, status, data, c.status, c.code)
				for _, hidden := range []string{hostPath, namespace("alice"), "dirstore"} {
					assert.NotContains(t, string(data), hidden, what)
				}
			}
		})
	}
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: failingStore{Store: memstore.New(memstore.Options{}), kind: store.ErrUnavailable}}})
	status, _, data := srv.client("").do("GET", "/healthz", nil)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.NotContains(t, string(data), hostPath, "/healthz answers anyone")
	assert.Contains(t, string(data), "store_unavailable")
}
