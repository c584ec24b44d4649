package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
)

// logBuffer collects log records as text, safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// namespaceOf is the store prefix of an API key's sessions.
func namespaceOf(key string) string {
	if key == "" {
		return "public"
	}
	sum := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(sum[:12])
}

// TestCorruptStateStartsFresh: a session whose stored blob is damaged, of
// another format, or another API key's, starts empty; the answer says so
// in state_warning, the log has a record, the old blob is kept aside
// (downloadable), and the next execution runs on the new state without a
// warning.
func TestCorruptStateStartsFresh(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	var logs logBuffer
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}, APIKeys: []string{"key-aaaaaaaa", "key-bbbbbbbb"}, Logger: logs.logger()})
	alice, bob := srv.client("key-aaaaaaaa"), srv.client("key-bbbbbbbb")
	nsA, nsB := namespaceOf("key-aaaaaaaa"), namespaceOf("key-bbbbbbbb")

	alice.run("shared", "secret = 'alice'")
	good, err := st.Get(ctx, nsA+"/shared")
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), good.Data...)
	damaged[len(damaged)/2] ^= 0x40
	for name, c := range map[string]struct {
		c    *client
		sid  string
		blob []byte
	}{
		"damaged":            {alice, nsA + "/victim", damaged},
		"truncated":          {alice, nsA + "/cut", good.Data[:len(good.Data)/3]},
		"other-format":       {alice, nsA + "/json", []byte(`{"secret": "not a state blob"}`)},
		"other-api-key":      {bob, nsB + "/shared", good.Data},
		"other-session-id":   {alice, nsA + "/copied", good.Data},
		"other-signing-key":  {alice, nsA + "/resigned", signedElsewhere(t)},
		"empty":              {alice, nsA + "/empty", []byte{}},
		"other-store-format": {alice, nsA + "/tiered", []byte("MTS1\x05{\"v\":1}data")},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := st.Put(ctx, c.sid, c.blob, store.Cond{}); err != nil {
				t.Fatal(err)
			}
			id := c.sid[strings.Index(c.sid, "/")+1:]
			status, resp, e := c.c.exec(map[string]any{"session_id": id, "code": "x = 1\n'secret' in locals()"})
			if status != http.StatusOK {
				t.Fatalf("exec: %d %+v", status, e)
			}
			w := resp.StateWarning
			if w == nil || w.Code != httpapi.WarningStateCorrupt || !strings.HasPrefix(w.QuarantinedAs, id+".corrupt.") || w.Message == "" {
				t.Fatalf("state_warning = %+v", w)
			}
			if string(resp.Result) != "false" || !resp.StateSaved {
				t.Fatalf("the session did not start empty and save: %s saved=%v", resp.Result, resp.StateSaved)
			}
			if strings.Contains(w.Message, nsA) || strings.Contains(w.Message, nsB) {
				t.Errorf("the warning shows the store's namespace: %s", w.Message)
			}
			// The old blob is kept aside, in the client's own namespace.
			gstatus, _, kept := c.c.do("GET", "/state/"+w.QuarantinedAs, nil)
			if gstatus != http.StatusOK || !bytes.Equal(kept, c.blob) {
				t.Fatalf("GET the kept copy: %d, %d bytes (want the %d bytes stored)", gstatus, len(kept), len(c.blob))
			}
			if !strings.Contains(logs.String(), "session_id="+id) || !strings.Contains(logs.String(), "could not be loaded") {
				t.Errorf("no log record for the reset:\n%s", logs.String())
			}
			// The fresh state replaced the original: no warning any more.
			if again := c.c.run(id, "x"); again.StateWarning != nil || string(again.Result) != "1" {
				t.Fatalf("next exec: %s, warning %+v", again.Result, again.StateWarning)
			}
		})
	}
}

// signedElsewhere is a state blob written by a server with another
// signing key.
func signedElsewhere(t *testing.T) []byte {
	t.Helper()
	st := memstore.New(memstore.Options{})
	other := newServer(t, httpapi.Options{Session: session.Options{Store: st, SigningKey: []byte("another server's signing key!!")}})
	resp := other.client("").run("", "secret = 1")
	obj, err := st.Get(context.Background(), "public/"+resp.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	return obj.Data
}

// TestCorruptStateFailMode: with FailOnCorruptState the execution fails
// with 500 state_corrupt, nothing runs, the blob stays in place and a copy
// is kept aside; DELETE starts the session afresh.
func TestCorruptStateFailMode(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}, FailOnCorruptState: true})
	c := srv.client("")
	if _, err := st.Put(ctx, "public/s", []byte("garbage"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	status, _, data := c.do("POST", "/exec", []byte(`{"session_id": "s", "code": "x = 1"}`))
	wantError(t, "exec on corrupt state", status, data, http.StatusInternalServerError, "state_corrupt")
	var e apiErr
	_ = json.Unmarshal(data, &e)
	if !strings.Contains(e.Message, `"s.corrupt.`) || strings.Contains(e.Message, "public/") || !strings.Contains(e.Message, "DELETE /state/{id}") {
		t.Errorf("message %q: want the kept copy's client id and what to do", e.Message)
	}
	if obj, err := st.Get(ctx, "public/s"); err != nil || string(obj.Data) != "garbage" {
		t.Fatalf("the original was not left in place: %q %v", obj.Data, err)
	}
	if status, _, _ := c.do("DELETE", "/state/s", nil); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", status)
	}
	if resp := c.run("s", "x = 2\nx"); string(resp.Result) != "2" || resp.StateWarning != nil {
		t.Fatalf("after DELETE: %s %+v", resp.Result, resp.StateWarning)
	}
}

// TestDamagedDirStoreFile: a damaged file in the directory store is
// corrupt state on every endpoint (500 state_corrupt, or a fresh start
// with a warning for /exec), never 503 store_unavailable, and no answer
// shows the server's paths.
func TestDamagedDirStoreFile(t *testing.T) {
	dir := t.TempDir()
	st, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	damage := func(t *testing.T, id string) {
		t.Helper()
		path := filepath.Join(dir, fmt.Sprintf("%x.session", sha256.Sum256([]byte("public/"+id))))
		if err := os.WriteFile(path, []byte("monty-session-v1\n{\"id\": trunc"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"fresh", "fail"} {
		t.Run(mode, func(t *testing.T) {
			c := newServer(t, httpapi.Options{Session: session.Options{Store: st}, FailOnCorruptState: mode == "fail"}).client("")
			id := "d-" + mode
			c.run(id, "x = 1")
			damage(t, id)
			for _, path := range []string{"/state/" + id, "/state/" + id + "/info"} {
				status, _, data := c.do("GET", path, nil)
				wantError(t, "GET "+path, status, data, http.StatusInternalServerError, "state_corrupt")
				if strings.Contains(string(data), dir) {
					t.Errorf("GET %s shows the store's directory: %s", path, data)
				}
			}
			status, resp, e := c.exec(map[string]any{"session_id": id, "code": "'x' in locals()"})
			if mode == "fail" {
				if status != http.StatusInternalServerError || e.Error != "state_corrupt" || strings.Contains(e.Message, dir) {
					t.Fatalf("exec in fail mode: %d %+v", status, e)
				}
				return
			}
			if status != http.StatusOK || resp.StateWarning == nil || resp.StateWarning.Code != httpapi.WarningStateCorrupt || string(resp.Result) != "false" {
				t.Fatalf("exec: %d %+v %+v", status, resp, e)
			}
			if strings.Contains(resp.StateWarning.Message, dir) {
				t.Errorf("the warning shows the store's directory: %s", resp.StateWarning.Message)
			}
			status, _, kept := c.do("GET", "/state/"+resp.StateWarning.QuarantinedAs, nil)
			if status != http.StatusOK || !strings.HasPrefix(string(kept), "monty-session-v1\n{\"id\": trunc") {
				t.Fatalf("the kept copy: %d %q", status, kept)
			}
			if status, _, _ := c.do("GET", "/state/"+id+"/info", nil); status != http.StatusOK {
				t.Fatalf("info after the fresh state was stored: %d", status)
			}
		})
	}
}
