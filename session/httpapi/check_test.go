package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/httpapi"
)

// check posts to /check and decodes a 200 answer.
func (c *client) check(req map[string]any) (int, *httpapi.CheckResponse, []byte) {
	c.s.t.Helper()
	body, _ := json.Marshal(req)
	status, _, data := c.do("POST", "/check", body)
	if status != http.StatusOK {
		return status, nil, data
	}
	var resp httpapi.CheckResponse
	require.NoError(c.s.t, json.Unmarshal(data, &resp), string(data))
	return status, &resp, data
}

func TestCheckEndpoint(t *testing.T) {
	s := newServer(t, httpapi.Options{Stubs: "def server_fn(n: int) -> str: ...\n"})
	c := s.client("")

	status, resp, data := c.check(map[string]any{"code": "print(server_fn(2).upper())"})
	require.Equal(t, http.StatusOK, status, string(data))
	assert.True(t, resp.Clean)
	assert.Equal(t, "[]", strings.TrimSpace(string(mustJSON(t, resp.Diagnostics))), "an empty list, not null")

	status, resp, data = c.check(map[string]any{"code": "x: int = 'a'\nserver_fn('2')\n", "format": "concise"})
	require.Equal(t, http.StatusOK, status, string(data))
	assert.False(t, resp.Clean)
	require.Len(t, resp.Diagnostics, 2)
	assert.Equal(t, "invalid-assignment", resp.Diagnostics[0].Rule)
	assert.Equal(t, 2, resp.Diagnostics[1].Line)
	assert.Contains(t, resp.Text, "main.py:1:10: error[invalid-assignment]")
	assert.Contains(t, string(data), `"end_column":`)

	// The request's own stubs.
	status, resp, _ = c.check(map[string]any{"code": "client_fn(1)", "stubs": "def client_fn(x: str) -> None: ...\n"})
	require.Equal(t, http.StatusOK, status)
	require.Len(t, resp.Diagnostics, 1)

	// Against a session's own definitions, without changing it: a
	// session records them from its first checked call on (what it held
	// before is declared Any).
	c.run("sess", "before = 1")
	status, resp, _ = c.check(map[string]any{"code": "before.anything()", "session_id": "sess"})
	require.Equal(t, http.StatusOK, status)
	assert.True(t, resp.Clean, resp.Text)
	status, _, e := c.exec(map[string]any{"code": "def double(n: int) -> int:\n    return n * 2\nvalue = double(4)", "session_id": "sess", "type_check": true})
	require.Equal(t, http.StatusOK, status, e)
	status, resp, _ = c.check(map[string]any{"code": "double('x')", "session_id": "sess"})
	require.Equal(t, http.StatusOK, status)
	require.Len(t, resp.Diagnostics, 1)
	assert.Equal(t, "invalid-argument-type", resp.Diagnostics[0].Rule)
	assert.Equal(t, "8", c.run("sess", "value").ResultRepr)

	for name, body := range map[string]string{
		"no code":        `{"code": " "}`,
		"bad format":     `{"code": "1", "format": "xml"}`,
		"not json":       `{`,
		"negative limit": `{"code": "1", "limits": {"duration_ms": -1}}`,
	} {
		status, _, data := c.do("POST", "/check", []byte(body))
		wantError(t, name, status, data, http.StatusBadRequest, "invalid_request")
	}
	status, _, data = c.do("POST", "/check", []byte(`{"code": "1", "session_id": "../x"}`))
	wantError(t, "bad session", status, data, http.StatusBadRequest, "invalid_session_id")
	status, _, data = c.do("GET", "/check", nil)
	wantError(t, "GET", status, data, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestExecTypeCheck(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	c := s.client("")
	status, _, e := c.exec(map[string]any{"code": "count = 1\ndef inc(n: int) -> int:\n    return n + 1", "session_id": "typed", "type_check": true})
	require.Equal(t, http.StatusOK, status, e)

	status, _, e = c.exec(map[string]any{"code": "count = inc('1')", "session_id": "typed", "type_check": true})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, "type_check_failed", e.Error)
	assert.Equal(t, "typed", e.SessionID)
	require.Len(t, e.Diagnostics, 1)
	assert.Equal(t, "invalid-argument-type", e.Diagnostics[0].Rule)
	assert.Contains(t, e.Message, "nothing was run")
	assert.Equal(t, "1", c.run("typed", "count").ResultRepr, "the refused call did not run")

	status, resp, _ := c.exec(map[string]any{"code": "count = inc(count)\ncount", "session_id": "typed", "type_check": true})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "2", resp.ResultRepr)

	status, _, e = c.exec(map[string]any{"code": "ext(1)", "type_check": true, "stubs": "def ext(x: str) -> None: ...\n"})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, "type_check_failed", e.Error)

	body, _ := json.Marshal(map[string]any{"code": "1", "stubs": "X: int\n"})
	status, _, data := c.do("POST", "/exec", body)
	wantError(t, "stubs without type_check", status, data, http.StatusBadRequest, "invalid_request")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A server whose program links no type checker module says so (501), on
// /check and on a checked /exec, and runs nothing.
func TestCheckWithoutAChecker(t *testing.T) {
	s := newServer(t, httpapi.Options{Checker: typecheck.Lazy(typecheck.WithModule(nil))})
	c := s.client("")
	status, _, data := c.check(map[string]any{"code": "x = 1"})
	wantError(t, "/check", status, data, http.StatusNotImplemented, "type_check_unavailable")
	assert.Contains(t, string(data), "runtime/typecheck/embedded")

	status, _, e := c.exec(map[string]any{"code": "ran = 1", "session_id": "s", "type_check": true})
	require.Equal(t, http.StatusNotImplemented, status, e)
	require.Equal(t, "type_check_unavailable", e.Error)
	status, resp, e := c.exec(map[string]any{"code": "ran", "session_id": "s"})
	require.Equal(t, http.StatusOK, status, e)
	assert.Contains(t, resp.Stderr, "NameError", "nothing ran, so ran is not defined")
}
