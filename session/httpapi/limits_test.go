package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
)

// leanLimits are small limits for the tests of hostile code.
func leanLimits(d time.Duration) runtime.Limits {
	return runtime.Limits{MaxDuration: d, MaxMemory: 64 << 20, MaxOutput: 64 << 10}
}

// TestLimitSleepLoop: time spent sleeping counts towards the time limit,
// so a loop of sleeps ends within twice the limit with 422 time_limit; the
// output printed before comes back, and the session keeps its state.
func TestLimitSleepLoop(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(time.Second)}}).client("")
	s := c.run("", "n = 1")
	start := time.Now()
	status, _, e := c.exec(map[string]any{"session_id": s.SessionID, "code": "import time\nn = 2\nprint('started')\nwhile True:\n    time.sleep(0.05)"})
	elapsed := time.Since(start)
	wantLimit(t, "sleep loop", status, e, "time_limit")
	if elapsed > 2*time.Second {
		t.Fatalf("a sleep loop under a 1s limit ended after %v", elapsed)
	}
	if e.Stdout != "started\n" || e.Exception == nil || e.Exception.Type != "TimeoutError" || e.StateHash != s.StateHash {
		t.Fatalf("time limit answer: %+v", e)
	}
	if got := c.run(s.SessionID, "n"); string(got.Result) != "1" {
		t.Fatalf("n = %s after the time limit, want 1", got.Result)
	}
	// A single sleep past the limit fails at once.
	start = time.Now()
	status, _, e = c.exec(map[string]any{"code": "import time\ntime.sleep(30)"})
	if wantLimit(t, "long sleep", status, e, "time_limit"); time.Since(start) > time.Second {
		t.Fatalf("time.sleep(30) under a 1s limit took %v", time.Since(start))
	}
}

// TestLimitIntSize: an integer too large to compute in time is refused at
// once with 422 int_size_limit.
func TestLimitIntSize(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}}).client("")
	start := time.Now()
	status, _, e := c.exec(map[string]any{"code": "x = 10**10**7"})
	wantLimit(t, "10**10**7", status, e, "int_size_limit")
	if time.Since(start) > time.Second || e.Exception == nil || e.Exception.Type != "OverflowError" {
		t.Fatalf("10**10**7 after %v: %+v", time.Since(start), e)
	}
}

// TestLimitResultSize: a result larger than the result limit is refused
// inside the sandbox (422 result_size_limit, a small answer) and the call
// is not saved; the 200 MiB string returned a 419 MB answer.
func TestLimitResultSize(t *testing.T) {
	srv := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}})
	if got := srv.h.Limits().MaxResult; got != httpapi.DefaultMaxResult {
		t.Fatalf("MaxResult %d, want the default %d", got, httpapi.DefaultMaxResult)
	}
	c := srv.client("")
	s := c.run("", "keep = 1")
	body, _ := json.Marshal(map[string]any{"session_id": s.SessionID, "code": "keep = 2\n'a' * (40 * 2**20)"})
	status, _, data := c.do("POST", "/exec", body)
	if len(data) > 16<<10 {
		t.Fatalf("the answer to a refused result is %d bytes", len(data))
	}
	_, _, e := decode(t, status, data)
	wantLimit(t, "40 MiB result", status, e, "result_size_limit")
	if !strings.Contains(e.Message, "16 MiB") || e.Exception != nil {
		t.Fatalf("result limit answer: %+v", e)
	}
	if got := c.run(s.SessionID, "keep"); string(got.Result) != "1" {
		t.Fatalf("keep = %s after a refused result, want 1 (not saved)", got.Result)
	}
	// A value whose JSON and repr are much longer than its encoding: the
	// answer stays within the limit, saying what it left out.
	status, resp, e := c.exec(map[string]any{"code": "'\\x01' * 1000", "limits": map[string]any{"result_bytes": 2000}})
	if status != 200 || !resp.ResultTruncated || string(resp.Result) != "null" || len(resp.ResultRepr) > 2100 || !strings.Contains(resp.ResultRepr, "more bytes not shown") {
		t.Fatalf("escape-heavy result: %d %+v %+v", status, resp, e)
	}
}

// TestLimitLargeFinalValue: s = "a"*10**6 then [s]*300 (300 MB to encode)
// aborted the interpreter; now it is a 4xx and the session keeps working
// with its last saved state.
func TestLimitLargeFinalValue(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}}).client("")
	s := c.run("", "s = 'a' * 10**6")
	status, _, e := c.exec(map[string]any{"session_id": s.SessionID, "code": "[s] * 300"})
	if status < 400 || status >= 500 {
		t.Fatalf("[s] * 300: %d %+v, want a 4xx", status, e)
	}
	wantLimit(t, "[s] * 300", status, e, "result_size_limit")
	if got := c.run(s.SessionID, "len(s)"); string(got.Result) != "1000000" {
		t.Fatalf("len(s) = %s after the refused result", got.Result)
	}
}

// TestLimitHostCalls: more host calls than a run may make (here 2000
// sleeps gathered at once) is 422 host_call_limit, not a 500; the issue's
// asyncio.sleep(0) form, which makes no host call, simply succeeds.
func TestLimitHostCalls(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}}).client("")
	s := c.run("", "n = 1")
	status, _, e := c.exec(map[string]any{"session_id": s.SessionID, "code": "import asyncio\nn = 2\nawait asyncio.gather(*[asyncio.sleep(0.001) for _ in range(2000)])"})
	wantLimit(t, "2000 gathered sleeps", status, e, "host_call_limit")
	if !strings.Contains(e.Message, "host calls") {
		t.Fatalf("host call limit message: %q", e.Message)
	}
	code := "import asyncio\nasync def main():\n    await asyncio.gather(*[asyncio.sleep(0) for _ in range(2000)])\nasyncio.run(main())"
	if status, resp, e := c.exec(map[string]any{"session_id": s.SessionID, "code": code}); status >= 500 || (status == 200 && resp.Error != nil) {
		t.Fatalf("asyncio.sleep(0) gathered: %d %+v %+v", status, resp, e)
	}
	if got := c.run(s.SessionID, "n"); string(got.Result) != "1" {
		t.Fatalf("n = %s after the host call limit, want 1", got.Result)
	}
}

// TestLimitStoredStateTooLarge: a stored state that does not fit a call's
// memory limit is 422 state_too_large before anything runs, and the state
// is kept for a call with enough memory.
func TestLimitStoredStateTooLarge(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}}).client("")
	s := c.run("", "s = 'a' * (20 * 2**20)")
	status, _, e := c.exec(map[string]any{"session_id": s.SessionID, "code": "s = 'replaced'", "limits": map[string]any{"memory_bytes": 8 << 20}})
	wantLimit(t, "20 MiB state under 8 MiB", status, e, "state_too_large")
	if !strings.Contains(e.Message, "limits.memory_bytes") || !strings.Contains(e.Message, "DELETE") {
		t.Fatalf("state too large message: %q", e.Message)
	}
	if got := c.run(s.SessionID, "len(s)"); string(got.Result) != "20971520" {
		t.Fatalf("len(s) = %s after the refused call", got.Result)
	}
}

// TestLimitMetrics: limit answers are counted by code.
func TestLimitMetrics(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}}).client("")
	c.exec(map[string]any{"code": "x = 10**10**7"})
	_, _, m := c.do("GET", "/metrics", nil)
	for _, want := range []string{
		`monty_executions_total{outcome="limit"} 1`,
		`monty_execution_limits_total{limit="int_size_limit"} 1`,
		`monty_http_requests_total{code="422",endpoint="exec"} 1`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
}

// TestUploadDeclaredDumpTooLarge: a valid blob whose dump declares more
// than the server's memory limit per execution could never be loaded:
// the upload is refused with 413 state_too_large without decompressing it,
// and nothing is stored.
func TestUploadDeclaredDumpTooLarge(t *testing.T) {
	big := newServer(t, httpapi.Options{Session: session.Options{Limits: leanLimits(3 * time.Second)}}).client("")
	big.run("big", "s = 'a' * (40 * 2**20)")
	_, _, blob := big.do("GET", "/state/big", nil)
	if len(blob) > 1<<20 {
		t.Fatalf("a 40 MiB string compressed to %d bytes", len(blob))
	}
	// Same signing key, same (public) namespace, same session id: the blob
	// verifies, but this server allows 16 MiB per execution.
	small := newServer(t, httpapi.Options{Session: session.Options{Limits: runtime.Limits{MaxDuration: 3 * time.Second, MaxMemory: 16 << 20}}}).client("")
	status, _, body := small.do("POST", "/state/big", blob)
	wantError(t, "declared dump over the memory limit", status, body, http.StatusRequestEntityTooLarge, "state_too_large")
	if status, _, _ := small.do("GET", "/state/big", nil); status != 404 {
		t.Fatalf("a refused upload was stored: %d", status)
	}
	_, _, m := small.do("GET", "/metrics", nil)
	if !strings.Contains(string(m), "monty_state_uploads_too_large_total 1\n") {
		t.Fatalf("metrics do not count the refusal:\n%s", m)
	}
}
