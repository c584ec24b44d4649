package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestShutdownFinishes: Shutdown lets running executions finish and store
// their state, and refuses new ones.
func TestShutdownFinishes(t *testing.T) {
	st := memstore.New(memstore.Options{})
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}})
	c := srv.client("")
	s := c.run("", "x = 1")
	var wg sync.WaitGroup
	wg.Add(1)
	var got *httpapi.ExecResponse
	go func() {
		defer wg.Done()
		got = c.run(s.SessionID, "import time\ntime.sleep(0.4)\nx = 2")
	}()
	time.Sleep(150 * time.Millisecond)
	shut := make(chan error, 1)
	go func() { shut <- srv.h.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	status, _, body := c.do("POST", "/exec", []byte(`{"code": "1"}`))
	wantError(t, "exec while draining", status, body, http.StatusServiceUnavailable, "shutting_down")
	if status, _, _ := c.do("GET", "/healthz", nil); status != http.StatusServiceUnavailable {
		t.Fatalf("healthz while draining: %d", status)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()
	if !got.StateSaved {
		t.Fatalf("in-flight exec: %+v", got)
	}
	// Another instance over the same store continues with x = 2.
	next := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	if r := next.run(s.SessionID, "x"); string(r.Result) != "2" {
		t.Fatalf("x = %s after graceful shutdown, want 2", r.Result)
	}
}

// TestShutdownCancels: when Shutdown's context ends first, running
// executions are cancelled and their sessions keep the stored state.
func TestShutdownCancels(t *testing.T) {
	st := memstore.New(memstore.Options{})
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}})
	c := srv.client("")
	s := c.run("", "x = 1")
	wait := c.execInBackground(map[string]any{"session_id": s.SessionID, "code": "x = 2\nwhile True:\n    pass"})
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := srv.h.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	status, e := wait()
	if status != http.StatusServiceUnavailable || e.Error != "cancelled" {
		t.Fatalf("cancelled exec: %d %+v", status, e)
	}
	next := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	if r := next.run(s.SessionID, "x"); string(r.Result) != "1" {
		t.Fatalf("x = %s after cancelled call, want 1", r.Result)
	}
}
