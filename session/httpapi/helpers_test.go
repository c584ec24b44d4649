package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

var testKey = []byte("0123456789abcdef-test-signing-key")

// server is a Handler behind a real loopback HTTP server.
type server struct {
	t     testing.TB
	h     *httpapi.Handler
	srv   *httptest.Server
	store store.Store
}

// newServer starts a Handler; a nil opts.Session.Store means a fresh memory store.
func newServer(t testing.TB, opts httpapi.Options) *server {
	t.Helper()
	if opts.Session.Store == nil && opts.Keeper != nil {
		opts.Session.Store = opts.Keeper.Store()
	}
	if opts.Session.Store == nil {
		opts.Session.Store = memstore.New(memstore.Options{})
	}
	if opts.Session.SigningKey == nil {
		opts.Session.SigningKey = testKey
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Session.Limits == (runtime.Limits{}) {
		opts.Session.Limits = runtime.Limits{MaxDuration: 5 * time.Second, MaxMemory: 64 << 20, MaxOutput: 1 << 20}
	}
	if opts.Keeper == nil {
		opts.Keeper = newKeeper(t, opts.Session.Store, session.ManagerOptions{})
	}
	h, err := httpapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &server{t: t, h: h, srv: srv, store: opts.Session.Store}
}

// newKeeper is a keeper of live sessions in st, as a process's, closed
// when the test ends.
func newKeeper(t testing.TB, st store.Store, mo session.ManagerOptions) *session.Manager {
	t.Helper()
	k := session.NewManager(session.Options{Store: st}, mo)
	t.Cleanup(k.Close)
	return k
}

// client talks to a server with one API key (empty: none).
type client struct {
	s   *server
	key string
}

func (s *server) client(key string) *client { return &client{s: s, key: key} }

// do sends a request and returns the status, headers and body.
func (c *client) do(method, path string, body []byte, header ...string) (int, http.Header, []byte) {
	c.s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.s.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		c.s.t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// exec posts a request to /exec and decodes a 200 answer.
func (c *client) exec(req map[string]any) (int, *httpapi.ExecResponse, apiErr) {
	c.s.t.Helper()
	body, _ := json.Marshal(req)
	status, _, data := c.do("POST", "/exec", body)
	return decode(c.s.t, status, data)
}

// execInBackground starts exec(req) and returns the function that waits
// for its status and error.
func (c *client) execInBackground(req map[string]any) (wait func() (int, apiErr)) {
	type answer struct {
		status int
		e      apiErr
	}
	done := make(chan answer, 1)
	go func() {
		status, _, e := c.exec(req)
		done <- answer{status, e}
	}()
	return func() (int, apiErr) {
		a := <-done
		return a.status, a.e
	}
}

// run execs code in session id (empty: new) and fails unless it succeeds.
func (c *client) run(id, code string) *httpapi.ExecResponse {
	c.s.t.Helper()
	req := map[string]any{"code": code}
	if id != "" {
		req["session_id"] = id
	}
	status, resp, e := c.exec(req)
	if status != http.StatusOK {
		c.s.t.Fatalf("exec %q: status %d %+v", code, status, e)
	}
	if resp.Error != nil {
		c.s.t.Fatalf("exec %q raised %s: %s", code, resp.Error.Type, resp.Error.Text)
	}
	return resp
}

// apiErr is an error body.
type apiErr = httpapi.ErrorResponse

func decode(t testing.TB, status int, data []byte) (int, *httpapi.ExecResponse, apiErr) {
	t.Helper()
	if status != http.StatusOK {
		var e apiErr
		if err := json.Unmarshal(data, &e); err != nil || e.Error == "" || e.Message == "" {
			t.Fatalf("status %d with a body that is not an error object: %s", status, data)
		}
		return status, nil, e
	}
	var resp httpapi.ExecResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		t.Fatalf("bad exec response %s: %v", data, err)
	}
	return status, &resp, apiErr{}
}

// wantError checks an error answer.
func wantError(t *testing.T, what string, status int, data []byte, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: status %d, want %d (%s)", what, status, wantStatus, data)
	}
	var e apiErr
	if err := json.Unmarshal(data, &e); err != nil || e.Error != wantCode || e.Message == "" {
		t.Fatalf("%s: body %s, want error %q with a message", what, data, wantCode)
	}
}

// wantLimit checks a 422 answer to POST /exec for code, with its message
// and the session id, and returns it.
func wantLimit(t *testing.T, what string, status int, e apiErr, code string) apiErr {
	t.Helper()
	if status != http.StatusUnprocessableEntity || e.Error != code || e.Message == "" || e.SessionID == "" {
		t.Fatalf("%s: %d %+v, want 422 %q with a message and the session id", what, status, e, code)
	}
	if strings.Contains(e.Message, "wasm") || strings.Contains(e.Stderr, "wasm stack") {
		t.Fatalf("%s: the answer shows the interpreter's internals: %+v", what, e)
	}
	return e
}

// signalStore is a real store that reports each Get on a channel: a
// session load, which an execution does right after taking its slot.
type signalStore struct {
	store.Store
	gets chan string
}

func newSignalStore() *signalStore {
	return &signalStore{Store: memstore.New(memstore.Options{}), gets: make(chan string, 64)}
}

func (s *signalStore) Get(ctx context.Context, id string) (store.Object, error) {
	select {
	case s.gets <- id:
	default:
	}
	return s.Store.Get(ctx, id)
}

// waitGet waits for the next Get.
func (s *signalStore) waitGet(t *testing.T) {
	t.Helper()
	select {
	case <-s.gets:
	case <-time.After(10 * time.Second):
		t.Fatal("no store read within 10s")
	}
}

// requestLog is a slog.Handler that reports each request record, by path,
// once the handler has finished with the request (the record is written
// after the execution slot is freed).
type requestLog struct{ done chan string }

func newRequestLog() *requestLog { return &requestLog{done: make(chan string, 64)} }

func (l *requestLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *requestLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *requestLog) WithGroup(string) slog.Handler            { return l }
func (l *requestLog) Handle(_ context.Context, r slog.Record) error {
	var path, status string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "path":
			path = a.Value.String()
		case "status":
			status = a.Value.String()
		}
		return true
	})
	select {
	case l.done <- path + " " + status:
	default:
	}
	return nil
}
