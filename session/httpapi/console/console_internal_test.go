package console

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestCookieLifetime: a cookie verifies until its expiry and not after;
// one signed with another secret, or altered, never does; a revoked one
// stops verifying, and revoking prunes the cookies that expired anyway.
func TestCookieLifetime(t *testing.T) {
	now := time.Now()
	a := newAuth([]byte("0123456789abcdef-secret"), time.Hour)
	s := a.issue("kabc", now)
	got, ok := a.verify(s.value, now.Add(59*time.Minute))
	assert.True(t, ok)
	assert.Equal(t, "kabc", got.ns)
	_, ok = a.verify(s.value, now.Add(61*time.Minute))
	assert.False(t, ok, "expired")
	_, ok = newAuth([]byte("another-secret-0123456"), time.Hour).verify(s.value, now)
	assert.False(t, ok, "another secret")
	for _, bad := range []string{"", ".", s.value + "x", "x" + s.value, strings.Replace(s.value, ".", "", 1)} {
		_, ok = a.verify(bad, now)
		assert.False(t, ok, bad)
	}
	assert.True(t, a.checkCSRF(s, a.csrf(s)))
	assert.False(t, a.checkCSRF(s, a.csrf(a.issue("kabc", now))), "another sign-in's token")
	assert.False(t, a.checkCSRF(s, ""))

	old := a.issue("kabc", now.Add(-2*time.Hour))
	a.revoked[old.nonce] = old.expires
	a.revoke(s, now)
	_, ok = a.verify(s.value, now)
	assert.False(t, ok, "signed out")
	assert.NotContains(t, a.revoked, old.nonce, "pruned once expired")
}

// TestText: the helpers that shape what the pages show.
func TestText(t *testing.T) {
	assert.Equal(t, "abc", clip("abc", 3))
	assert.Equal(t, "ab…", clip("abcd", 2))
	assert.Equal(t, "a…", clip("aé", 2), "never inside a rune")
	assert.Equal(t, "12 B", byteSize(12))
	assert.Equal(t, "1.5 KiB", byteSize(1536))
	assert.Equal(t, "2.0 MiB", byteSize(2<<20))
	assert.Equal(t, "unknown", ago(time.Time{}))
	assert.Equal(t, "3m ago", ago(time.Now().Add(-3*time.Minute)))
	assert.Equal(t, "/ui/", pageURL("", 1))
	assert.Equal(t, "/ui/?q=a+b%26c&page=2", pageURL("a b&c", 2))
	assert.Equal(t, "/ui/s/s1/files/dir/a%3Fb%23c%25.txt", fileURL("s1", "dir/a?b#c%.txt"))
}
