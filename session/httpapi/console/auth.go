package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cookieName is the console's sign-in cookie.
const cookieName = "monty_console"

// Labels of the keys derived from the console's secret, so that a console MAC can
// never be taken for another HMAC the server computes with the same secret.
const (
	cookieKeyLabel = "monty-go/console/cookie/v1\x00"
	csrfKeyLabel   = "monty-go/console/csrf/v1\x00"
)

// auth signs and checks the console's cookies and CSRF tokens.
//
// A cookie is "payload.mac": payload is base64url of "ns|expiry|nonce"
// (the namespace, a Unix time, 16 random bytes in hex) and mac its
// HMAC-SHA256 under the cookie key. It holds no API key: the namespace is
// derived from the key's hash (package apikey), and the key itself is
// never stored. The CSRF token of a cookie is the HMAC-SHA256 of the whole
// cookie under the CSRF key, so it is bound to one sign-in.
type auth struct {
	cookieKey, csrfKey []byte
	ttl                time.Duration

	mu      sync.Mutex
	revoked map[string]time.Time // nonce of a signed-out cookie → its expiry
}

func newAuth(secret []byte, ttl time.Duration) *auth {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	return &auth{cookieKey: derive(cookieKeyLabel), csrfKey: derive(csrfKeyLabel), ttl: ttl, revoked: map[string]time.Time{}}
}

// signIn is a verified sign-in.
type signIn struct {
	ns      string
	nonce   string
	expires time.Time
	value   string // the cookie's value
}

func (a *auth) mac(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// issue makes a cookie for namespace ns, valid for the TTL.
func (a *auth) issue(ns string, now time.Time) signIn {
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := signIn{ns: ns, nonce: hex.EncodeToString(b[:]), expires: now.Add(a.ttl).Truncate(time.Second)}
	payload := base64.RawURLEncoding.EncodeToString([]byte(ns + "|" + strconv.FormatInt(s.expires.Unix(), 10) + "|" + s.nonce))
	s.value = payload + "." + base64.RawURLEncoding.EncodeToString(a.mac(a.cookieKey, payload))
	return s
}

// verify checks a cookie's value: its MAC, its expiry and that it was not
// signed out.
func (a *auth) verify(value string, now time.Time) (signIn, bool) {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return signIn{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, a.mac(a.cookieKey, payload)) {
		return signIn{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return signIn{}, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return signIn{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return signIn{}, false
	}
	a.mu.Lock()
	_, out := a.revoked[parts[2]]
	a.mu.Unlock()
	if out {
		return signIn{}, false
	}
	return signIn{ns: parts[0], nonce: parts[2], expires: time.Unix(exp, 0), value: value}, true
}

// revoke makes this instance refuse the cookie of s from now on (sign-out;
// other instances refuse it once it expires), and forgets the cookies
// revoked earlier that have expired anyway.
func (a *auth) revoke(s signIn, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, exp := range a.revoked {
		if !now.Before(exp) {
			delete(a.revoked, n)
		}
	}
	a.revoked[s.nonce] = s.expires
}

// csrf is the CSRF token of the sign-in s.
func (a *auth) csrf(s signIn) string {
	return base64.RawURLEncoding.EncodeToString(a.mac(a.csrfKey, s.value))
}

// checkCSRF reports whether token is the CSRF token of s (constant time).
func (a *auth) checkCSRF(s signIn, token string) bool {
	got, err := base64.RawURLEncoding.DecodeString(token)
	return err == nil && token != "" && hmac.Equal(got, a.mac(a.csrfKey, s.value))
}

// cookie is the Set-Cookie of a sign-in (or, with an empty value, of a
// sign-out) for request r.
func cookie(r *http.Request, value string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: value, Path: "/ui", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
		c.MaxAge = int(time.Until(expires).Seconds())
	}
	return c
}

// sameOrigin reports whether a state-changing request may come from where
// it came: a browser's Origin header, when it sends one, must name this
// server (a cross-site form or script is refused even before its CSRF
// token is checked).
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}
