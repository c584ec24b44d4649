package servetest

import (
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMFinishesRunning: on SIGTERM monty serve lets a running
// execution finish and store its state, then exits 0; a new process over
// the same store continues the session. While it drains, GET /health (the
// readiness probe) answers 503 and GET / (liveness) still 200.
func TestSIGTERMFinishesRunning(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "sessions")
	srv := serve(t, "--store", storeDir)
	status, _, data, err := srv.do("POST", "/exec", []byte(`{"session_id": "s1", "code": "x = 1"}`))
	if err != nil || status != 200 {
		t.Fatalf("first exec: %d %s %v", status, data, err)
	}
	type answer struct {
		status int
		data   []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		status, _, data, err := srv.do("POST", "/exec", []byte(`{"session_id": "s1", "code": "import time\ntime.sleep(1)\nx = 2\nx"}`))
		done <- answer{status, data, err}
	}()
	time.Sleep(300 * time.Millisecond)
	if got := liveness(t, srv); got != "ok" {
		t.Fatalf("GET / before SIGTERM: status %q, want ok", got)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		status, _, _, err := srv.do("GET", "/health", nil)
		if err == nil && status == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /health never answered 503 while draining: %d %v", status, err)
		}
	}
	if got := liveness(t, srv); got != "draining" {
		t.Fatalf("GET / while draining: status %q, want draining", got)
	}
	a := <-done
	var r execResult
	if a.err != nil || a.status != 200 || json.Unmarshal(a.data, &r) != nil || string(r.Result) != "2" {
		t.Fatalf("exec running at SIGTERM: %d %s %v", a.status, a.data, a.err)
	}
	select {
	case <-srv.exited:
		if srv.waitErr != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", srv.waitErr, srv.log())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("monty serve did not exit after SIGTERM")
	}
	next := serve(t, "--store", storeDir)
	status, _, data, err = next.do("POST", "/exec", []byte(`{"session_id": "s1", "code": "x"}`))
	if err != nil || status != 200 || json.Unmarshal(data, &r) != nil || string(r.Result) != "2" {
		t.Fatalf("after restart: %d %s %v", status, data, err)
	}
}

// liveness asks GET / and returns its status, failing t unless it answered
// 200 with what the binary is.
func liveness(t *testing.T, srv *instance) string {
	t.Helper()
	status, header, data, err := srv.do("GET", "/", nil)
	var page struct {
		Name, Monty, Engine, Status string
		Protocol                    int `json:"protocol_version"`
	}
	if err != nil || status != 200 || json.Unmarshal(data, &page) != nil {
		t.Fatalf("GET /: %d %s %v", status, data, err)
	}
	if page.Name != "monty-go" || page.Monty == "" || page.Engine == "" || page.Protocol == 0 || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET / does not say what this binary is: %s (%s)", data, header.Get("Content-Type"))
	}
	return page.Status
}
