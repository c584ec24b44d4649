package apikey

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGuardCountsFailuresByAddress(t *testing.T) {
	now := time.Unix(1000, 0)
	g := NewGuard(GuardOptions{MaxFailures: 3, Window: time.Minute})
	g.now = func() time.Time { return now }
	for range 3 {
		assert.Zero(t, g.Failed("10.0.0.1"))
	}
	now = now.Add(10 * time.Second)
	assert.Equal(t, 50*time.Second, g.Failed("10.0.0.1"), "refused until the window ends")
	assert.Equal(t, "50", RetryAfter(50*time.Second))
	assert.Zero(t, g.Failed("10.0.0.2"), "another address counts apart")
	now = now.Add(51 * time.Second)
	assert.Zero(t, g.Failed("10.0.0.1"), "a new window")

	var none *Guard
	assert.Zero(t, none.Failed("x"), "a nil Guard counts nothing")
	assert.Equal(t, "1", RetryAfter(time.Millisecond))
}

func TestGuardClient(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.7:5000"
	r.Header.Set("X-Forwarded-For", "203.0.113.9, 10.0.0.1")
	assert.Equal(t, "192.0.2.7", NewGuard(GuardOptions{}).Client(r), "X-Forwarded-For is not trusted by default")
	assert.Equal(t, "203.0.113.9", NewGuard(GuardOptions{TrustForwardedFor: true}).Client(r))
	r.Header.Del("X-Forwarded-For")
	assert.Equal(t, "192.0.2.7", NewGuard(GuardOptions{TrustForwardedFor: true}).Client(r))
}

func TestGuardMemoryIsBounded(t *testing.T) {
	g := NewGuard(GuardOptions{})
	for i := range maxClients + 100 {
		g.Failed(string(rune('a'+i%26)) + itoaTest(i))
	}
	assert.LessOrEqual(t, len(g.clients), maxClients)
}

func itoaTest(i int) string { return RetryAfter(time.Duration(i+1) * time.Second) }
