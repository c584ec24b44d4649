package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestPersistenceDisabled: seed 004's STATE_PERSISTENCE_ENABLED=false.
// Every execution starts empty and stores nothing; uploads are refused;
// what was stored before can still be read and deleted.
func TestPersistenceDisabled(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	before := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	old := before.run("old", "x = 1")

	c := newServer(t, httpapi.Options{Session: session.Options{Store: st, Ephemeral: true}}).client("")
	resp := c.run("old", "y = 2\n'x' in locals()")
	if string(resp.Result) != "false" || resp.StateSaved || resp.HasState || resp.StateNote != session.NotSavedEphemeral {
		t.Fatalf("exec with persistence off: %+v", resp)
	}
	status, again, _ := c.exec(map[string]any{"session_id": "old", "code": "y"})
	if status != http.StatusOK || again.Error == nil || again.Error.Type != "NameError" {
		t.Fatalf("the next execution saw the previous one's globals: %d %+v", status, again)
	}
	if n := st.Len(); n != 1 {
		t.Errorf("the store holds %d blobs; persistence off stores none", n)
	}
	if obj, err := st.Get(ctx, "public/old"); err != nil || obj.Info.SHA256 != old.StateHash {
		t.Errorf("the state stored before changed: %v", err)
	}
	for _, r := range []struct{ method, path string }{
		{"POST", "/state/old"}, {"PUT", "/state/old/files/a.txt"}, {"DELETE", "/state/old/files/a.txt"},
	} {
		status, _, data := c.do(r.method, r.path, []byte("data"))
		wantError(t, r.method+" "+r.path, status, data, http.StatusForbidden, "persistence_disabled")
	}
	if status, _, _ := c.do("GET", "/state/old", nil); status != http.StatusOK {
		t.Errorf("GET of earlier state: %d", status)
	}
	if status, _, _ := c.do("DELETE", "/state/old", nil); status != http.StatusNoContent {
		t.Errorf("DELETE of earlier state: %d", status)
	}
}

// TestCaptureOnError: seed 004's STATE_CAPTURE_ON_ERROR. By default a call
// that raises leaves the session as it was; with the option its state is
// stored.
func TestCaptureOnError(t *testing.T) {
	for _, capture := range []bool{false, true} {
		c := newServer(t, httpapi.Options{Session: session.Options{CaptureOnError: capture}}).client("")
		c.run("s", "x = 1")
		status, resp, _ := c.exec(map[string]any{"session_id": "s", "code": "x = 2\nraise ValueError('boom')"})
		if status != http.StatusOK || resp.Error == nil || resp.StateSaved != capture {
			t.Fatalf("capture=%v: exec that raised: %d %+v", capture, status, resp)
		}
		want := map[bool]string{false: "1", true: "2"}[capture]
		if got := c.run("s", "x"); string(got.Result) != want {
			t.Errorf("capture=%v: x = %s after the call that raised, want %s", capture, got.Result, want)
		}
	}
}

// TestStateSizeCapLogged: seed 004's STATE_MAX_SIZE_MB. A state over the
// cap is not stored, the execution still succeeds, a warning is logged,
// and the next execution continues from the previous state.
func TestStateSizeCapLogged(t *testing.T) {
	var logs logBuffer
	c := newServer(t, httpapi.Options{Session: session.Options{MaxStateSize: 64 << 10}, Logger: logs.logger()}).client("")
	c.run("s", "small = 1")
	resp := c.run("s", "big = [str(i * 7919 % 1000003) for i in range(40000)]\nlen(big)")
	if string(resp.Result) != "40000" || resp.StateSaved || !strings.Contains(resp.StateNote, "over the 65536-byte limit") {
		t.Fatalf("exec over the cap: %+v", resp)
	}
	if !strings.Contains(logs.String(), "state size exceeds limit") || !strings.Contains(logs.String(), "session_id=s") {
		t.Errorf("no warning in the log:\n%s", logs.String())
	}
	if got := c.run("s", "('big' in locals(), small)"); string(got.Result) != "[false,1]" {
		t.Errorf("next execution: %s; want the state from before the call that was too large", got.Result)
	}
}
