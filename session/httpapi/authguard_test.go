package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi"
)

// TestFailedAuthenticationBacksOff: past the guard's threshold, an
// address's wrong keys get 429 with Retry-After, on the API and its
// console's sign-in alike (one count); a good key from that address still
// works, and another address is not affected.
func TestFailedAuthenticationBacksOff(t *testing.T) {
	guard := apikey.NewGuard(apikey.GuardOptions{MaxFailures: 3, TrustForwardedFor: true})
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys, AuthGuard: guard})
	wrong := s.client("guess-0001")
	for i := range 3 {
		status, _, body := wrong.do("POST", "/exec", []byte(`{"code": "1"}`), "X-Forwarded-For", "203.0.113.9")
		require.Equal(t, http.StatusUnauthorized, status, "failure %d: %s", i+1, body)
	}
	status, hdr, body := wrong.do("POST", "/exec", []byte(`{"code": "1"}`), "X-Forwarded-For", "203.0.113.9")
	require.Equal(t, http.StatusTooManyRequests, status, string(body))
	assert.Contains(t, string(body), "too_many_auth_failures")
	assert.NotEmpty(t, hdr.Get("Retry-After"))

	// The console's sign-in shares the count.
	b := s.browser(t)
	resp, page := b.post("/ui/signin", url.Values{"key": {"guess-0002"}}, "X-Forwarded-For", "203.0.113.9")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, page)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, page, "too many keys that are not accepted")

	// A good key from the same address works; another address is counted apart.
	good := s.client(consoleKeys[0])
	status, _, body = good.do("POST", "/exec", []byte(`{"code": "1"}`), "X-Forwarded-For", "203.0.113.9")
	assert.Equal(t, http.StatusOK, status, string(body))
	resp, page = b.post("/ui/signin", url.Values{"key": {consoleKeys[0]}}, "X-Forwarded-For", "203.0.113.9")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
	status, _, _ = wrong.do("POST", "/exec", []byte(`{"code": "1"}`), "X-Forwarded-For", "198.51.100.1")
	assert.Equal(t, http.StatusUnauthorized, status)
}
