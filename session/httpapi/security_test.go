package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

func TestAPIKeys(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"key-alice", "key-bob"}})
	alice, bob := srv.client("key-alice"), srv.client("key-bob")
	for _, c := range []*client{srv.client(""), srv.client("key-alic"), srv.client("key-alice2"), srv.client("KEY-ALICE")} {
		status, _, body := c.do("POST", "/exec", []byte(`{"code": "1"}`))
		wantError(t, "exec with key "+c.key, status, body, http.StatusUnauthorized, "unauthorized")
		status, _, body = c.do("GET", "/state/x/info", nil)
		wantError(t, "info with key "+c.key, status, body, http.StatusUnauthorized, "unauthorized")
	}
	a := alice.run("", "secret = 'alice'")
	// Bob cannot see, download, delete or continue Alice's session.
	status, _, body := bob.do("GET", "/state/"+a.SessionID, nil)
	wantError(t, "bob downloads alice's state", status, body, 404, "state_not_found")
	status, _, body = bob.do("GET", "/state/"+a.SessionID+"/info", nil)
	if status != 200 || !strings.Contains(string(body), `"exists":false`) {
		t.Fatalf("bob's info on alice's session: %d %s", status, body)
	}
	if status, _, _ = bob.do("DELETE", "/state/"+a.SessionID, nil); status != 204 {
		t.Fatalf("bob's delete: %d", status)
	}
	_, resp, _ := bob.exec(map[string]any{"session_id": a.SessionID, "code": "secret"})
	if resp == nil || resp.Error == nil || resp.Error.Type != "NameError" {
		t.Fatalf("bob continuing alice's session id saw: %+v", resp)
	}
	// Bob's exec made his own session under that id; Alice's is untouched.
	if got := alice.run(a.SessionID, "secret"); string(got.Result) != `"alice"` {
		t.Fatalf("alice's session after bob: %s", got.Result)
	}
	// The same id holds different state per key.
	if got := bob.run(a.SessionID, "secret = 'bob'\nsecret"); string(got.Result) != `"bob"` {
		t.Fatal(got.Result)
	}
	if got := alice.run(a.SessionID, "secret"); string(got.Result) != `"alice"` {
		t.Fatalf("alice's session after bob wrote his: %s", got.Result)
	}
	// Health and metrics need no key.
	if status, _, _ := srv.client("").do("GET", "/healthz", nil); status != 200 {
		t.Fatalf("healthz without key: %d", status)
	}
}

// TestUploadVerification: an upload is stored only if it is a well-formed
// blob signed with the server's key; anything else is refused with 400
// before it is stored (so Monty's deserialiser never sees it), and the
// stored state stays as it was.
func TestUploadVerification(t *testing.T) {
	srv := newServer(t, httpapi.Options{Session: session.Options{MaxStateSize: 64 << 10}})
	c := srv.client("")
	s := c.run("", "data = list(range(100))\nowner = 'me'")
	_, _, good := c.do("GET", "/state/"+s.SessionID, nil)

	// A blob written by a server with another signing key.
	other := newServer(t, httpapi.Options{Session: session.Options{SigningKey: []byte("another-signing-key-of-the-same-length")}}).client("")
	o := other.run("", "owner = 'mallory'")
	_, _, foreign := other.do("GET", "/state/"+o.SessionID, nil)
	// A blob written with no signature at all.
	st := memstore.New(memstore.Options{})
	us, err := session.Open(context.Background(), "u", session.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := us.Exec(context.Background(), "owner = 'unsigned'"); err != nil {
		t.Fatal(err)
	}
	us.Close(context.Background())
	unsigned, err := st.Get(context.Background(), "u")
	if err != nil {
		t.Fatal(err)
	}

	tampered := bytes.Clone(good)
	i := bytes.Index(tampered, []byte("owner"))
	if i < 0 {
		t.Fatal("blob does not contain the JSON view")
	}
	copy(tampered[i:], "OWNER")
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	resigned := bytes.Clone(good)
	resigned[len(resigned)-1] ^= 0x80

	for name, blob := range map[string][]byte{
		"tampered JSON view":   tampered,
		"flipped dump bit":     flipped,
		"bad signature":        resigned,
		"truncated":            good[:len(good)-40],
		"truncated header":     good[:10],
		"signature cut off":    good[:len(good)-32],
		"foreign key":          foreign,
		"unsigned":             unsigned.Data,
		"empty":                {},
		"seed-style lz4+b64":   []byte("BCJNGGRwuQsAAIBnYXJiYWdlAAAAAA=="),
		"random":               bytes.Repeat([]byte{0x4d, 0x47, 0x4f, 0x53, 1, 3, 0}, 50),
		"trailing bytes added": append(bytes.Clone(good), 0),
	} {
		status, _, body := c.do("POST", "/state/"+s.SessionID, blob)
		wantError(t, name, status, body, http.StatusBadRequest, "invalid_state")
	}
	// Nothing was stored: the session continues with its own state.
	got := c.run(s.SessionID, "(owner, len(data))")
	if string(got.Result) != `["me",100]` {
		t.Fatalf("state after refused uploads: %s", got.Result)
	}
	// Uploads under a new id are refused the same way and store nothing.
	status, _, body := c.do("POST", "/state/fresh", foreign)
	wantError(t, "foreign to new id", status, body, 400, "invalid_state")
	if status, _, _ := c.do("GET", "/state/fresh", nil); status != 404 {
		t.Fatalf("refused upload left state under the id: %d", status)
	}

	// Oversized: declared, and streamed without a length.
	big := bytes.Repeat([]byte("x"), 65<<10)
	status, _, body = c.do("POST", "/state/"+s.SessionID, big)
	wantError(t, "oversized", status, body, http.StatusRequestEntityTooLarge, "state_too_large")
	req, _ := http.NewRequest("POST", srv.srv.URL+"/state/"+s.SessionID, io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	wantError(t, "oversized chunked", resp.StatusCode, body, http.StatusRequestEntityTooLarge, "state_too_large")
}

// TestStateTooLargeToSave: a call whose state would exceed the cap still
// answers; the state is not saved and the previous state stays.
func TestStateTooLargeToSave(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{MaxStateSize: 16 << 10}}).client("")
	s := c.run("", "small = 1")
	got := c.run(s.SessionID, "import random\nbig = [random.random() for _ in range(20000)]\nlen(big)")
	if string(got.Result) != "20000" || got.StateSaved || got.StateNote == "" || got.StateHash != s.StateHash {
		t.Fatalf("oversized state: %+v", got)
	}
	got = c.run(s.SessionID, "try:\n    big\n    r = True\nexcept NameError:\n    r = False\n(small, r)")
	if string(got.Result) != "[1,false]" {
		t.Fatalf("after oversized: %s", got.Result)
	}
}

func TestHostSurvivesHostileCode(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	// Refused as upstream Monty refuses them without a handler.
	for code, typ := range map[string]string{
		"open('/etc/passwd').read()":   "PermissionError",
		"import os\nos.getenv('HOME')": "RuntimeError",
	} {
		status, resp, e := c.exec(map[string]any{"code": code})
		if status != 200 || resp.Error == nil || resp.Error.Type != typ {
			t.Fatalf("%q: %d %+v %+v", code, status, resp, e)
		}
	}
	for code, limit := range map[string]string{
		"x = []\nwhile True:\n    x.append('a' * 1000000)": "memory_limit",
		"def f(): f()\nf()":    "recursion_limit",
		"print('a' * 2000000)": "output_limit",
	} {
		status, _, e := c.exec(map[string]any{"code": code})
		wantLimit(t, code, status, e, limit)
	}
	if got := c.run("", "1 + 1"); string(got.Result) != "2" {
		t.Fatal("server unusable after hostile code")
	}
}

// TestStateBoundToSession: a blob verifies only for the session id and
// API key it was written for, so a blob leaked from one key cannot be
// uploaded under another, nor moved to another session id; the owner can
// restore an earlier blob of the same session (If-Match guards against
// doing so by accident).
func TestStateBoundToSession(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"key-alice", "key-bob"}})
	alice, bob := srv.client("key-alice"), srv.client("key-bob")
	a := alice.run("shared-id", "owner = 'alice'")
	_, _, aliceBlob := alice.do("GET", "/state/"+a.SessionID, nil)

	// Bob, holding Alice's blob, cannot upload it: not under the same id,
	// not under another.
	for _, id := range []string{"shared-id", "bobs-session"} {
		status, _, body := bob.do("POST", "/state/"+id, aliceBlob)
		wantError(t, "alice's blob uploaded by bob to "+id, status, body, http.StatusBadRequest, "invalid_state")
		if !strings.Contains(wantErrorBody(t, body).Message, "session id") {
			t.Fatalf("the refusal does not say why: %s", body)
		}
	}
	// Alice cannot move it to another of her sessions either.
	status, _, body := alice.do("POST", "/state/alice-other", aliceBlob)
	wantError(t, "alice's blob under another id", status, body, http.StatusBadRequest, "invalid_state")
	// Nothing was stored anywhere.
	for _, c := range []*client{alice, bob} {
		for _, id := range []string{"bobs-session", "alice-other"} {
			if status, _, _ := c.do("GET", "/state/"+id, nil); status != 404 {
				t.Fatalf("a refused upload was stored under %s: %d", id, status)
			}
		}
	}
	// The owner may restore an earlier blob of the same session.
	alice.run(a.SessionID, "owner = 'changed'")
	if status, _, body := alice.do("POST", "/state/"+a.SessionID, aliceBlob); status != 201 {
		t.Fatalf("owner restoring her blob: %d %s", status, body)
	}
	if got := alice.run(a.SessionID, "owner"); string(got.Result) != `"alice"` {
		t.Fatalf("owner after restore = %s", got.Result)
	}
}

// TestLegacyBlobs: blobs signed with the plain signing key (before blobs
// were bound to sessions) still load, and are re-signed with the session's
// key when saved; uploading one is refused.
func TestLegacyBlobs(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}})
	c := srv.client("")
	// What the server stored before the change: a blob signed with the
	// server's key itself, under the namespaced id.
	old, err := session.Open(ctx, "public/legacy", session.Options{Store: st, SigningKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "v = 'from before'"); err != nil {
		t.Fatal(err)
	}
	old.Close(ctx)
	_, _, legacy := c.do("GET", "/state/legacy", nil)

	status, _, body := c.do("POST", "/state/legacy", legacy)
	wantError(t, "legacy blob upload", status, body, http.StatusBadRequest, "invalid_state")
	got := c.run("legacy", "v + '!'")
	if string(got.Result) != `"from before!"` || !got.StateSaved {
		t.Fatalf("legacy blob: %+v", got)
	}
	// Saved again, it is bound to the session: its download uploads.
	_, _, bound := c.do("GET", "/state/legacy", nil)
	if status, _, body := c.do("POST", "/state/legacy", bound); status != 201 {
		t.Fatalf("re-signed blob: %d %s", status, body)
	}
}

func wantErrorBody(t *testing.T, body []byte) apiErr {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e
}

// Options.MaxHostCalls bounds the host calls of one execution: past it
// the run stops with 422 host_call_limit; 0 keeps the runtime's default.
func TestMaxHostCalls(t *testing.T) {
	env := runtime.Env{"A": "1"}
	code := "import os\nfor i in range(5):\n    os.getenv('A')\n'done'"
	c := newServer(t, httpapi.Options{Session: session.Options{Limits: runtime.Limits{MaxHostCalls: 3}}, OS: env}).client("")
	status, resp, e := c.exec(map[string]any{"code": code})
	if status != 422 || e.Error != "host_call_limit" {
		t.Fatalf("5 calls with MaxHostCalls 3: %d %+v %+v", status, resp, e)
	}
	c = newServer(t, httpapi.Options{OS: env}).client("")
	status, resp, e = c.exec(map[string]any{"code": code})
	if status != 200 || string(resp.Result) != `"done"` {
		t.Fatalf("5 calls with the default: %d %+v %+v", status, resp, e)
	}
}
