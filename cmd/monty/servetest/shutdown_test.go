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
// the same store continues the session.
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
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
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
