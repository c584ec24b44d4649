// Package apikey checks API keys and maps each to its namespace of
// sessions, the same way on every surface that takes keys (the HTTP API,
// the monty.v1 WebSocket server) and on every instance that is given the
// same keys.
package apikey

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// Public is the namespace of every request when no keys are configured.
const Public = "public"

// Set is a set of accepted API keys. The zero value accepts every request,
// in the Public namespace. A Set is immutable and safe for concurrent use.
type Set struct {
	sums [][32]byte // sha256 of each key
}

// New returns the set of keys.
func New(keys []string) Set {
	var s Set
	for _, k := range keys {
		s.sums = append(s.sums, sha256.Sum256([]byte(k)))
	}
	return s
}

// Len is the number of keys.
func (s Set) Len() int { return len(s.sums) }

// Namespace returns the namespace of key and whether key is accepted,
// comparing it with every configured key in constant time. The namespace
// is derived from the key ("k" and 24 hex digits of its SHA-256), so every
// instance given the same keys agrees on it.
func (s Set) Namespace(key string) (string, bool) {
	if len(s.sums) == 0 {
		return Public, true
	}
	sum := sha256.Sum256([]byte(key))
	match := 0
	for _, k := range s.sums {
		match |= subtle.ConstantTimeCompare(sum[:], k[:])
	}
	if match != 1 || key == "" {
		return "", false
	}
	return namespaceOf(sum), true
}

// namespaceOf is the namespace of the key whose SHA-256 is sum.
func namespaceOf(sum [32]byte) string { return "k" + hex.EncodeToString(sum[:12]) }

// FromRequest returns the key a request carries: its x-api-key header, or
// else the token of an "Authorization: Bearer" header.
func FromRequest(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}
