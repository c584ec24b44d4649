package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/httpapi"
)

// raw sends a request with target exactly as given, written on the
// connection by hand (no client cleans or encodes it), and returns the
// status, headers and body of the answer.
func (c *client) raw(t *testing.T, method, target string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", c.s.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: monty\r\nx-api-key: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, target, c.key, len(body), body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, data
}

// TestDotSegmentsRefused: a request path with a "." or ".." segment, raw
// or percent-encoded, or an empty one, is 400 invalid_path on every
// route, with the JSON error body: never cleaned and redirected, and
// nothing is read or changed.
func TestDotSegmentsRefused(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"k"}})
	c := srv.client("k")
	c.run("s", "import os\nos.makedirs('a')\nopen('a/b.txt', 'w').write('kept')")

	for _, r := range []struct{ method, target string }{
		// File paths.
		{"GET", "/state/s/files/../x"},
		{"GET", "/state/s/files/a/./b.txt"},
		{"GET", "/state/s/files/%2e%2e/x"},
		{"GET", "/state/s/files/%2E%2E/%2e%2e/etc/passwd"},
		{"GET", "/state/s/files/a/%2e/b.txt"},
		{"GET", "/state/s/files/a/%2E/b.txt"},
		{"GET", "/state/s/files/a//b.txt"},
		{"GET", "/state/s/files/a/.."},
		{"PUT", "/state/s/files/a/../a/b.txt"},
		{"PUT", "/state/s/files/./a/b.txt"},
		{"PUT", "/state/s/files/a/%2e%2e/%2e%2e/x"},
		{"DELETE", "/state/s/files/a/./b.txt"},
		{"DELETE", "/state/s/files/x/../a/b.txt"},
		// Session ids.
		{"GET", "/state/./files"},
		{"GET", "/state/../s"},
		{"GET", "/state/%2e%2e/info"},
		{"GET", "/state/%2E/files/a/b.txt"},
		{"GET", "/state/s/./info"},
		{"POST", "/state/s/../s"},
		{"DELETE", "/state/s/.."},
		{"DELETE", "/state/%2e"},
		// Run ids and the other routes.
		{"POST", "/runs/../resume"},
		{"POST", "/runs/%2e%2e/resume"},
		{"POST", "/runs/x/./resume"},
		{"POST", "/exec/.."},
		{"POST", "/./exec"},
		{"POST", "/check/%2e"},
		{"GET", "/health/../metrics"},
		{"GET", "/%2e%2e/healthz"},
		{"GET", "//healthz"},
	} {
		what := r.method + " " + r.target
		status, hdr, body := c.raw(t, r.method, r.target, []byte("changed"))
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", what, body)
		assert.Empty(t, hdr.Get("Location"), "%s is redirected", what)
		assert.Equal(t, "application/json", hdr.Get("Content-Type"), what)
		var e httpapi.ErrorResponse
		require.NoError(t, json.Unmarshal(body, &e), "%s: %s", what, body)
		assert.Equal(t, "invalid_path", e.Error, what)
		assert.Contains(t, e.Message, "segment", what)
	}

	// Nothing was read, written or removed; plain paths still work.
	status, _, body := c.raw(t, "GET", "/state/s/files/a/b.txt", nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "kept", string(body))
	ids, err := srv.store.List(t.Context())
	require.NoError(t, err)
	assert.Len(t, ids, 1, "the store holds session s alone: %+v", ids)
	// Dots inside names are names.
	status, _, body = c.raw(t, "GET", "/state/s/files/a/.b.txt", nil)
	assert.Equal(t, http.StatusNotFound, status, string(body))
	status, _, body = c.raw(t, "GET", "/state/s.v2/info", nil)
	assert.Equal(t, http.StatusOK, status, string(body))
	_, _, metrics := c.do("GET", "/metrics", nil)
	assert.True(t, strings.Contains(string(metrics), `code="400",endpoint="other"`), "the refusals are counted")
}
