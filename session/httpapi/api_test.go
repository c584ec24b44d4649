package httpapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

func TestNewRefusesBadOptions(t *testing.T) {
	st := memstore.New(memstore.Options{})
	keeper := newKeeper(t, st, session.ManagerOptions{})
	for name, opts := range map[string]httpapi.Options{
		"no keeper":      {Session: session.Options{Store: st, SigningKey: testKey}},
		"no store":       {Session: session.Options{SigningKey: testKey}, Keeper: newKeeper(t, nil, session.ManagerOptions{})},
		"no signing key": {Session: session.Options{Store: st}, Keeper: keeper},
		"short key":      {Session: session.Options{Store: st, SigningKey: []byte("short")}, Keeper: keeper},
		"empty api key":  {Session: session.Options{Store: st, SigningKey: testKey}, APIKeys: []string{"a", ""}, Keeper: keeper},
	} {
		if _, err := httpapi.New(opts); !errors.Is(err, httpapi.ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
}

func TestExecSession(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	first := c.run("", "x = [1, 2, 3]\ndef add(a, b): return a + b")
	if len(first.SessionID) != 32 || !first.HasState || first.StateSize == 0 || len(first.StateHash) != 64 || !first.StateSaved || first.ExitCode != 0 {
		t.Fatalf("first exec: %+v", first)
	}
	second := c.run(first.SessionID, "print(sum(x), add(10, 20))\nx.append(4)\nlen(x)")
	if second.SessionID != first.SessionID || second.Stdout != "6 30\n" || second.Stderr != "" || string(second.Result) != "4" || second.ResultRepr != "4" {
		t.Fatalf("second exec: %+v", second)
	}
	if second.StateHash == first.StateHash {
		t.Fatal("state hash did not change after x.append")
	}
	// A value with no JSON form comes back as null with its repr.
	third := c.run(first.SessionID, "{1, 2}")
	if string(third.Result) != "null" || third.ResultRepr != "{1, 2}" {
		t.Fatalf("set result: %s %q", third.Result, third.ResultRepr)
	}
	// Without a session id each call starts empty.
	status, resp, _ := c.exec(map[string]any{"code": "x"})
	if status != 200 || resp.Error == nil || resp.Error.Type != "NameError" || resp.SessionID == first.SessionID {
		t.Fatalf("fresh session: %d %+v", status, resp)
	}
}

func TestExecException(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	s := c.run("", "n = 1")
	status, resp, _ := c.exec(map[string]any{"session_id": s.SessionID, "code": "n = 2\nprint('before')\ndef f():\n    raise ValueError('bad value')\nf()"})
	if status != 200 || resp.ExitCode != 1 || resp.Error == nil {
		t.Fatalf("exception: %d %+v", status, resp)
	}
	e := resp.Error
	if e.Type != "ValueError" || e.Message != "bad value" || len(e.Traceback) != 2 || e.Traceback[1].Function != "f" || e.Traceback[1].Line != 4 {
		t.Fatalf("error: %+v", e)
	}
	if resp.Stdout != "before\n" || !strings.Contains(resp.Stderr, "ValueError: bad value") || !strings.Contains(resp.Stderr, "Traceback") {
		t.Fatalf("streams: %q %q", resp.Stdout, resp.Stderr)
	}
	// Transactional: the failed call left the state as it was.
	if resp.StateSaved || resp.StateHash != s.StateHash {
		t.Fatalf("failed call changed state: %+v", resp)
	}
	if got := c.run(s.SessionID, "n"); string(got.Result) != "1" {
		t.Fatalf("n after failed call = %s, want 1", got.Result)
	}
	// A syntax error is an exception too.
	_, resp, _ = c.exec(map[string]any{"code": "def ("})
	if resp == nil || resp.Error == nil || resp.Error.Type != "SyntaxError" {
		t.Fatalf("syntax error: %+v", resp)
	}
	// So is code writing to stderr.
	got := c.run("", "import sys\nprint('oops', file=sys.stderr)")
	if got.Stderr != "oops\n" || got.Stdout != "" {
		t.Fatalf("stderr: %+v", got)
	}
}

func TestExecInputs(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	status, resp, _ := c.exec(map[string]any{"code": "total = sum(xs) * k\ntotal", "inputs": map[string]any{"xs": []int{1, 2, 3}, "k": 10}})
	if status != 200 || resp.Error != nil || string(resp.Result) != "60" {
		t.Fatalf("inputs: %d %+v", status, resp)
	}
	// Inputs stay in the session like other globals.
	if got := c.run(resp.SessionID, "(total, k)"); string(got.Result) != "[60,10]" {
		t.Fatalf("after inputs: %s", got.Result)
	}
	for _, bad := range []map[string]any{
		{"code": "1", "inputs": map[string]any{"not-a-name": 1}},
		{"code": "1", "inputs": map[string]any{"1x": 1}},
	} {
		body, _ := json.Marshal(bad)
		status, _, data := c.do("POST", "/exec", body)
		wantError(t, "bad input name", status, data, 400, "invalid_request")
	}
}

func TestExecLimitsClamped(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: runtime.Limits{MaxDuration: 300 * time.Millisecond, MaxMemory: 32 << 20, MaxOutput: 1000}}}).client("")
	// Asking for an hour gets the server's 300 ms.
	start := time.Now()
	status, _, e := c.exec(map[string]any{"code": "while True:\n    pass", "limits": map[string]any{"duration_ms": 3600_000}})
	if wantLimit(t, "time limit", status, e, "time_limit"); e.Exception == nil || e.Exception.Limit != "time_limit" || time.Since(start) > 5*time.Second {
		t.Fatalf("time limit: %+v after %v", e, time.Since(start))
	}
	// Asking for less than the maximum is honoured; what was printed
	// before the limit comes back.
	status, _, e = c.exec(map[string]any{"code": "print('x' * 500)", "limits": map[string]any{"output_bytes": 100}})
	if wantLimit(t, "output limit", status, e, "output_limit"); e.Stdout != strings.Repeat("x", 100) || !strings.Contains(e.Message, "up to 1000 bytes") {
		t.Fatalf("output limit: %+v", e)
	}
	status, _, e = c.exec(map[string]any{"code": "x = 'a' * (100 * 1024 * 1024)", "limits": map[string]any{"memory_bytes": 1 << 40}})
	if wantLimit(t, "memory limit", status, e, "memory_limit"); e.Exception == nil || e.Exception.Type != "MemoryError" || !strings.Contains(e.Stderr, "MemoryError") {
		t.Fatalf("memory limit: %+v", e)
	}
	status, _, e = c.exec(map[string]any{"code": "def f(n): return f(n + 1)\nf(0)", "limits": map[string]any{"recursion": 50}})
	wantLimit(t, "recursion limit", status, e, "recursion_limit")
	status, _, e = c.exec(map[string]any{"code": "'a' * 2000", "limits": map[string]any{"result_bytes": 1000}})
	wantLimit(t, "result limit", status, e, "result_size_limit")
	status, _, e = c.exec(map[string]any{"code": "'a' * 500", "limits": map[string]any{"result_bytes": 1000}})
	if status != 200 {
		t.Fatalf("result under the request's limit: %d %+v", status, e)
	}
	// The server sets no recursion maximum, which means the interpreter's
	// default depth: asking for more gets that, never an unbounded stack.
	depth := "def f(n):\n    try:\n        return f(n + 1)\n    except RecursionError:\n        return n\nf(0)"
	status, resp, _ := c.exec(map[string]any{"code": depth, "limits": map[string]any{"recursion": 100_000_000}})
	if status != 200 || resp.Error != nil || string(resp.Result) == "" {
		t.Fatalf("deep recursion request: %d %+v", status, resp)
	}
	var reached int
	if err := json.Unmarshal(resp.Result, &reached); err != nil || reached > runtime.DefaultMaxRecursion {
		t.Fatalf("recursion reached depth %s; want at most the default %d", resp.Result, runtime.DefaultMaxRecursion)
	}
}

// TestDefaultLimits builds a handler with no limits configured: it applies
// DefaultLimits (a service must not run code without bounds).
func TestDefaultLimits(t *testing.T) {
	h, err := httpapi.New(httpapi.Options{
		Keeper:  newKeeper(t, nil, session.ManagerOptions{}),
		Session: session.Options{Store: memstore.New(memstore.Options{}), SigningKey: testKey},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// More than the default 256 MiB of heap.
	body := `{"code": "x = 'a' * (300 * 1024 * 1024)"}`
	res, err := http.Post(srv.URL+"/exec", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e httpapi.ErrorResponse
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != 422 || e.Error != "memory_limit" {
		t.Fatalf("300 MiB under the default limits: %d %v %+v", res.StatusCode, err, e)
	}
	if d := httpapi.DefaultLimits(); d.MaxDuration <= 0 || d.MaxMemory <= 0 || d.MaxOutput <= 0 || d.MaxResult != httpapi.DefaultMaxResult {
		t.Fatalf("DefaultLimits %+v leave time, memory, output or results unbounded", d)
	}
	if got := h.Limits(); got != httpapi.DefaultLimits() {
		t.Fatalf("Limits() = %+v, want DefaultLimits", got)
	}
	// Limits without an output or result bound get the defaults: an answer
	// is always bounded.
	h, err = httpapi.New(httpapi.Options{Keeper: newKeeper(t, memstore.New(memstore.Options{}), session.ManagerOptions{}), Session: session.Options{SigningKey: testKey, Limits: runtime.Limits{MaxMemory: 4 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Limits(); got.MaxOutput != httpapi.DefaultMaxOutput || got.MaxResult != 4<<20 {
		t.Fatalf("Limits() = %+v, want the default output bound and a result bound of MaxMemory", got)
	}
}

func TestExecBadRequests(t *testing.T) {
	c := newServer(t, httpapi.Options{MaxBody: 4096}).client("")
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"not json", "code=1", 400, "invalid_request"},
		{"no code", `{"session_id": "abc"}`, 400, "invalid_request"},
		{"other language", `{"lang": "js", "code": "1"}`, 400, "unsupported_language"},
		{"bad session id", `{"code": "1", "session_id": "../etc/passwd"}`, 400, "invalid_session_id"},
		{"dot session id", `{"code": "1", "session_id": ".hidden"}`, 400, "invalid_session_id"},
		{"negative limit", `{"code": "1", "limits": {"duration_ms": -1}}`, 400, "invalid_request"},
		{"too large", `{"code": "` + strings.Repeat("x", 5000) + `"}`, 413, "request_too_large"},
	} {
		status, _, data := c.do("POST", "/exec", []byte(tc.body))
		wantError(t, tc.name, status, data, tc.status, tc.code)
	}
	// The seed's request shape (lang, entity_id, user_id) is accepted.
	status, _, data := c.do("POST", "/exec", []byte(`{"lang": "py", "code": "1", "entity_id": "test", "user_id": "user1"}`))
	if status != 200 {
		t.Fatalf("seed request: %d %s", status, data)
	}
	status, _, data = c.do("GET", "/nope", nil)
	wantError(t, "unknown path", status, data, 404, "not_found")
	status, _, data = c.do("GET", "/exec", nil)
	if status != http.StatusMethodNotAllowed {
		t.Fatalf("GET /exec: %d %s", status, data)
	}
}

func TestStateEndpoints(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	s := c.run("", "secret = 42")
	// Download with its ETag, then 304 for the same tag.
	status, hdr, blob := c.do("GET", "/state/"+s.SessionID, nil)
	if status != 200 || hdr.Get("ETag") != `"`+s.StateHash+`"` || int64(len(blob)) != s.StateSize || hdr.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("download: %d %v len %d", status, hdr, len(blob))
	}
	status, _, body := c.do("GET", "/state/"+s.SessionID, nil, "If-None-Match", `"`+s.StateHash+`"`)
	if status != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("If-None-Match: %d", status)
	}
	status, _, _ = c.do("GET", "/state/"+s.SessionID, nil, "If-None-Match", `"0000"`)
	if status != 200 {
		t.Fatalf("stale If-None-Match: %d", status)
	}
	// Info.
	var info httpapi.StateInfo
	status, _, body = c.do("GET", "/state/"+s.SessionID+"/info", nil)
	if err := json.Unmarshal(body, &info); err != nil || status != 200 || !info.Exists || info.SizeBytes != s.StateSize || info.Hash != s.StateHash || info.CreatedAt == nil || info.Source != "memory" || info.SessionID != s.SessionID {
		t.Fatalf("info: %d %s", status, body)
	}
	// Delete: 204, then again 204; the state is gone.
	for range 2 {
		if status, _, _ = c.do("DELETE", "/state/"+s.SessionID, nil); status != http.StatusNoContent {
			t.Fatalf("delete: %d", status)
		}
	}
	status, _, body = c.do("GET", "/state/"+s.SessionID, nil)
	wantError(t, "download deleted", status, body, 404, "state_not_found")
	status, _, body = c.do("GET", "/state/"+s.SessionID+"/info", nil)
	if status != 200 || string(body) != `{"exists":false,"session_id":"`+s.SessionID+`"}`+"\n" {
		t.Fatalf("info after delete: %d %s", status, body)
	}
	// Upload the downloaded blob: 201, and the next exec sees the variable.
	status, hdr, body = c.do("POST", "/state/"+s.SessionID, blob, "Content-Type", "application/octet-stream")
	var up httpapi.UploadResponse
	if err := json.Unmarshal(body, &up); err != nil || status != 201 || up.Message != "state_uploaded" || up.Size != int64(len(blob)) || hdr.Get("ETag") != `"`+s.StateHash+`"` {
		t.Fatalf("upload: %d %s", status, body)
	}
	if got := c.run(s.SessionID, "print(secret)"); got.Stdout != "42\n" {
		t.Fatalf("after upload: %+v", got)
	}
	// A blob belongs to its session: it cannot seed another session id.
	status, _, body = c.do("POST", "/state/copy-1", blob)
	wantError(t, "blob of another session", status, body, 400, "invalid_state")
	for _, path := range []string{"/state/..", "/state/a%2Fb", "/state/.x/info"} {
		status, _, body = c.do("GET", path, nil)
		if status != 400 && status != 404 {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
	}
}

func TestUploadTakesPriority(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	s := c.run("", "v = 'old'")
	_, _, cached := c.do("GET", "/state/"+s.SessionID, nil)
	c.run(s.SessionID, "v = 'new'")
	if status, _, body := c.do("POST", "/state/"+s.SessionID, cached); status != 201 {
		t.Fatalf("upload: %d %s", status, body)
	}
	got := c.run(s.SessionID, "v")
	if string(got.Result) != `"old"` {
		t.Fatalf("after upload v = %s, want the uploaded \"old\"", got.Result)
	}
	// If-Match makes an upload conditional on the state the client saw.
	status, _, body := c.do("POST", "/state/"+s.SessionID, cached, "If-Match", `"`+got.StateHash+`"`)
	if status != 201 {
		t.Fatalf("matching If-Match: %d %s", status, body)
	}
	c.run(s.SessionID, "v = 'newer'")
	status, _, body = c.do("POST", "/state/"+s.SessionID, cached, "If-Match", `"`+s.StateHash+`"`)
	wantError(t, "stale If-Match", status, body, http.StatusPreconditionFailed, "precondition_failed")
}

// TestConflict: a state upload while an execution runs wins; the
// execution's changes are refused with 409 and the session is intact.
func TestConflict(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	s := c.run("", "v = 1")
	_, _, blob := c.do("GET", "/state/"+s.SessionID, nil)
	wait := c.execInBackground(map[string]any{"session_id": s.SessionID, "code": "import time\ntime.sleep(0.5)\nv = 2"})
	time.Sleep(200 * time.Millisecond)
	if st, _, body := c.do("POST", "/state/"+s.SessionID, blob); st != 201 {
		t.Fatalf("upload: %d %s", st, body)
	}
	status, e := wait()
	if status != http.StatusConflict || e.Error != "conflict" {
		t.Fatalf("concurrent exec: %d %+v, want 409 conflict", status, e)
	}
	if got := c.run(s.SessionID, "v"); string(got.Result) != "1" {
		t.Fatalf("v = %s, want 1", got.Result)
	}
}

func TestAtCapacity(t *testing.T) {
	srv := newServer(t, httpapi.Options{MaxConcurrent: 1})
	c := srv.client("")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.run("", "import time\ntime.sleep(1.5)")
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	status, hdr, body := c.do("POST", "/exec", []byte(`{"code": "1"}`))
	wantError(t, "second exec", status, body, http.StatusTooManyRequests, "at_capacity")
	// Queued, it would have waited for the first one (over a second more).
	if hdr.Get("Retry-After") == "" || time.Since(start) > 800*time.Millisecond {
		t.Fatalf("429 should come at once with Retry-After: %v after %v", hdr, time.Since(start))
	}
	// Info and delete do not need a slot.
	if status, _, _ := c.do("GET", "/state/none/info", nil); status != 200 {
		t.Fatalf("info while busy: %d", status)
	}
	if status, _, _ := c.do("DELETE", "/state/none", nil); status != 204 {
		t.Fatalf("delete while busy: %d", status)
	}
	wg.Wait()
	c.run("", "1")
	_, _, m := c.do("GET", "/metrics", nil)
	if !strings.Contains(string(m), "monty_executions_rejected_total 1\n") {
		t.Fatalf("metrics do not count the rejection:\n%s", m)
	}
}

// A fresh server scrapes every series it knows in advance at 0, so that
// rate() and alerts on a series' absence work before the first request.
func TestMetricsKnownSeriesStartAtZero(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	_, _, m := c.do("GET", "/metrics", nil)
	for _, want := range []string{
		`monty_executions_total{outcome="ok"} 0`,
		`monty_executions_total{outcome="exception"} 0`,
		`monty_executions_total{outcome="limit"} 0`,
		`monty_executions_total{outcome="type_error"} 0`,
		`monty_executions_total{outcome="replayed"} 0`,
		`monty_type_checks_total{outcome="clean"} 0`,
		`monty_type_checks_total{outcome="problems"} 0`,
		`monty_execution_limits_total{limit="time_limit"} 0`,
		`monty_execution_limits_total{limit="memory_limit"} 0`,
		`monty_execution_limits_total{limit="host_call_limit"} 0`,
		`monty_execution_limits_total{limit="state_too_large"} 0`,
		`monty_http_requests_total{code="200",endpoint="exec"} 0`,
		`monty_http_requests_total{code="200",endpoint="check"} 0`,
		`monty_http_requests_total{code="200",endpoint="state_get"} 0`,
		`monty_executions_rejected_total 0`,
	} {
		if !strings.Contains(string(m), want+"\n") {
			t.Errorf("a fresh server's metrics lack %q", want)
		}
	}
}

func TestHealthAndMetrics(t *testing.T) {
	c := newServer(t, httpapi.Options{APIKeys: []string{"k1"}}).client("")
	status, _, body := c.do("GET", "/healthz", nil)
	var h httpapi.Health
	if err := json.Unmarshal(body, &h); err != nil || status != 200 || h.Status != "ok" || h.Store != "ok" || h.Capacity == 0 {
		t.Fatalf("healthz: %d %s", status, body)
	}
	k := c.s.client("k1")
	k.run("", "x = 1")
	k.exec(map[string]any{"code": "1/0"})
	k.do("POST", "/state/abc", []byte("garbage"))
	_, hdr, m := c.do("GET", "/metrics", nil)
	for _, want := range []string{
		`monty_executions_total{outcome="ok"} 1`,
		`monty_executions_total{outcome="exception"} 1`,
		`monty_http_requests_total{code="200",endpoint="exec"} 2`,
		`monty_http_requests_total{code="400",endpoint="state_upload"} 1`,
		`monty_execution_duration_seconds_count{monty_outcome="ok"} 1`,
		`monty_execution_duration_seconds_count{monty_outcome="exception"} 1`,
		`monty_state_size_bytes_count 1`,
		`monty_state_uploads_invalid_total 1`,
		"# TYPE monty_execution_duration_seconds histogram",
		`monty_execution_duration_seconds_bucket{monty_outcome="exception",le="+Inf"} 1`,
		`monty_executions_capacity `,
		`monty_executions_running 0`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Errorf("metrics content type %q", hdr.Get("Content-Type"))
	}
}
