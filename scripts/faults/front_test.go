package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The front passes answers on, and while it drops them all, the request
// is still done in full and the client gets no answer.
func TestFrontLosesAnswers(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "done")
	}))
	defer srv.Close()
	f, err := newFront(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Post(f.url(), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "done" {
		t.Fatalf("answer %q, want done", body)
	}
	f.dropping.Store(100)
	if _, err := client.Post(f.url(), "text/plain", strings.NewReader("x")); err == nil {
		t.Fatal("an answer came back while all are dropped")
	}
	if got := served.Load(); got != 2 {
		t.Fatalf("the instance served %d requests, want 2 (the lost answer's request was done)", got)
	}
}
