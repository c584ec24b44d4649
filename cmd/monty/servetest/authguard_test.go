package servetest

import (
	"net/http"
	"strings"
	"testing"
)

// TestFailedKeysBackOff: monty serve counts wrong keys by address across
// its surfaces: past 20 in a minute the API answers 429 with Retry-After
// (by X-Forwarded-For with --trust-forwarded-for), and a good key still
// works.
func TestFailedKeysBackOff(t *testing.T) {
	in := serve(t, "--store", "mem:", "--api-key", "right-key-0001", "--trust-forwarded-for")
	status := 0
	var header http.Header
	for i := range 21 {
		var err error
		status, header, _, err = in.do("POST", "/exec", []byte(`{"code": "1"}`), "x-api-key", "guess", "X-Forwarded-For", "203.0.113.5")
		if err != nil {
			t.Fatal(err)
		}
		if i < 20 && status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, status)
		}
	}
	if status != http.StatusTooManyRequests || header.Get("Retry-After") == "" {
		t.Fatalf("the 21st wrong key: %d (Retry-After %q), want 429 with Retry-After", status, header.Get("Retry-After"))
	}
	status, _, body, err := in.do("POST", "/exec", []byte(`{"code": "1"}`), "x-api-key", "right-key-0001", "X-Forwarded-For", "203.0.113.5")
	if err != nil || status != http.StatusOK {
		t.Fatalf("a good key from that address: %d %v %s", status, err, body)
	}
	status, _, _, _ = in.do("POST", "/exec", []byte(`{"code": "1"}`), "x-api-key", "guess", "X-Forwarded-For", "198.51.100.5")
	if status != http.StatusUnauthorized {
		t.Fatalf("another address: %d, want 401", status)
	}
	if !strings.Contains(in.log(), "authentication failures over the limit") {
		t.Errorf("the refusal is not logged:\n%s", in.log())
	}
}
