package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// listFiles gets GET /state/{id}/files and decodes a 200 answer.
func (c *client) listFiles(id string) httpapi.FileList {
	c.s.t.Helper()
	status, _, body := c.do("GET", "/state/"+id+"/files", nil)
	var l httpapi.FileList
	if err := json.Unmarshal(body, &l); status != http.StatusOK || err != nil {
		c.s.t.Fatalf("list files of %s: %d %s", id, status, body)
	}
	return l
}

// TestFilesEndpoints: what the code writes under /work is listed and
// downloaded; an uploaded file is what the next execution reads, also in a
// session that the upload created; a removed file is gone.
func TestFilesEndpoints(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	s := c.run("", "import os\nos.makedirs('reports')\nwith open('/work/reports/out.csv', 'w') as f:\n    f.write('a,b\\n1,2\\n')\nos.getcwd()")
	if string(s.Result) != `"/work"` {
		t.Fatalf("cwd: %s", s.Result)
	}
	l := c.listFiles(s.SessionID)
	if len(l.Files) != 1 || l.Files[0].Path != "reports/out.csv" || l.Files[0].Size != 8 || l.TotalBytes != 8 ||
		l.MaxBytes != 16<<20 || l.SessionID != s.SessionID || l.Files[0].Modified.IsZero() {
		t.Fatalf("list: %+v", l)
	}

	status, hdr, body := c.do("GET", "/state/"+s.SessionID+"/files/reports/out.csv", nil)
	if status != 200 || string(body) != "a,b\n1,2\n" || hdr.Get("Content-Type") != "application/octet-stream" ||
		hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("Content-Disposition") != "attachment; filename=out.csv" {
		t.Fatalf("get: %d %v %q", status, hdr, body)
	}
	if status, _, _ := c.do("GET", "/state/"+s.SessionID+"/files/reports/out.csv", nil, "If-None-Match", hdr.Get("ETag")); status != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", status)
	}
	status, _, body = c.do("GET", "/state/"+s.SessionID+"/files/reports/nope.csv", nil)
	wantError(t, "missing file", status, body, 404, "file_not_found")
	status, _, body = c.do("GET", "/state/"+s.SessionID+"/files/reports", nil)
	wantError(t, "a directory", status, body, 404, "file_not_found")
	status, _, body = c.do("GET", "/state/unknown-session/files", nil)
	wantError(t, "unknown session", status, body, 404, "state_not_found")
	status, _, body = c.do("GET", "/state/unknown-session/files/x", nil)
	wantError(t, "unknown session's file", status, body, 404, "state_not_found")

	// An upload is what the next execution reads; a second one replaces it.
	status, _, body = c.do("PUT", "/state/"+s.SessionID+"/files/in/data.txt", []byte("3 4 5"))
	var fr httpapi.FileResponse
	if err := json.Unmarshal(body, &fr); status != 201 || err != nil || !fr.Created || fr.Size != 5 || fr.Path != "in/data.txt" || fr.StateHash == "" {
		t.Fatalf("put: %d %s", status, body)
	}
	if got := c.run(s.SessionID, "sum(int(x) for x in open('in/data.txt').read().split())"); string(got.Result) != "12" || got.StateHash != fr.StateHash {
		// A read: nothing stored again.
		t.Fatalf("exec after put: %s", got.Result)
	}
	status, _, body = c.do("PUT", "/state/"+s.SessionID+"/files/in/data.txt", []byte("10"))
	if err := json.Unmarshal(body, &fr); status != 200 || err != nil || fr.Created {
		t.Fatalf("replace: %d %s", status, body)
	}
	if got := c.run(s.SessionID, "open('in/data.txt').read()"); string(got.Result) != `"10"` {
		t.Fatalf("exec after replace: %s", got.Result)
	}

	// Uploading to a session that does not exist creates it.
	status, _, body = c.do("PUT", "/state/fresh-one/files/seed.json", []byte(`{"n": 41}`))
	if status != 201 {
		t.Fatalf("put into a new session: %d %s", status, body)
	}
	if got := c.run("fresh-one", "import json\njson.loads(open('seed.json').read())['n'] + 1"); string(got.Result) != "42" {
		t.Fatalf("new session: %s", got.Result)
	}

	status, _, body = c.do("DELETE", "/state/"+s.SessionID+"/files/in/data.txt", nil)
	if status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", status, body)
	}
	status, _, body = c.do("DELETE", "/state/"+s.SessionID+"/files/in/data.txt", nil)
	wantError(t, "delete again", status, body, 404, "file_not_found")
	if got := c.run(s.SessionID, "import os\nos.path.exists('in/data.txt')"); string(got.Result) != "false" {
		t.Fatalf("after delete: %s", got.Result)
	}
	status, hdr, _ = c.do("POST", "/state/"+s.SessionID+"/files", nil)
	if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" {
		t.Fatalf("POST on the list: %d %v", status, hdr)
	}
	_, _, metrics := c.do("GET", "/metrics", nil)
	for _, want := range []string{"monty_file_uploads_total 3", "monty_file_downloads_total 1", `code="201",endpoint="file_put"`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestFilesNamespaces: a key sees only its own sessions' files; another
// key's upload to the same id makes its own session; no key is 401.
func TestFilesNamespaces(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"key-a", "key-b"}})
	a, b := srv.client("key-a"), srv.client("key-b")
	a.run("shared-id", "open('secret.txt', 'w').write('a only')")
	status, _, body := b.do("GET", "/state/shared-id/files", nil)
	wantError(t, "other key lists", status, body, 404, "state_not_found")
	status, _, body = b.do("GET", "/state/shared-id/files/secret.txt", nil)
	wantError(t, "other key reads", status, body, 404, "state_not_found")
	if status, _, body := b.do("PUT", "/state/shared-id/files/secret.txt", []byte("b's")); status != 201 {
		t.Fatalf("other key's put: %d %s", status, body)
	}
	if _, _, body := a.do("GET", "/state/shared-id/files/secret.txt", nil); string(body) != "a only" {
		t.Fatalf("key a's file changed: %q", body)
	}
	if _, _, body := b.do("GET", "/state/shared-id/files/secret.txt", nil); string(body) != "b's" {
		t.Fatalf("key b's file: %q", body)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		status, _, body := srv.client("").do(m, "/state/shared-id/files/secret.txt", []byte("x"))
		wantError(t, m+" without a key", status, body, 401, "unauthorized")
	}
}

// TestFilesPathEscapes: paths that try to leave /work, or that are not
// paths, never read or write anything but the session's own files: they
// are refused with 400 invalid_path, dot and empty segments included
// (raw ones too: HTTP would clean and redirect them).
func TestFilesPathEscapes(t *testing.T) {
	srv := newServer(t, httpapi.Options{})
	c := srv.client("")
	c.run("esc", "open('ok.txt', 'w').write('ok')")
	for _, p := range []string{
		"%2e%2e/%2e%2e/etc/passwd", "..%2F..%2Fetc%2Fpasswd", "a/%2e%2e/%2e%2e/x", "%00", "a%00b",
		"%2Fwork%2F..%2Fx", "%2Fetc%2Fpasswd", "%2Fwork", "",
		"/etc/passwd", "./new.txt", "a//b", "a/./b", "a/../../x",
	} {
		for _, m := range []string{"PUT", "GET", "DELETE"} {
			status, _, body := c.do(m, "/state/esc/files/"+p, []byte("pwned"))
			wantError(t, m+" "+p, status, body, 400, "invalid_path")
		}
	}
	var paths []string
	for _, f := range c.listFiles("esc").Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "ok.txt" {
		t.Fatalf("files after the attempts: %v", paths)
	}
	ids, err := srv.store.List(context.Background())
	if err != nil || len(ids) != 1 {
		t.Fatalf("store after the attempts: %+v %v", ids, err)
	}
	// An escaped slash is a slash: a nested path, still under /work.
	if status, _, body := c.do("PUT", "/state/esc/files/sub%2Ffile.txt", []byte("nested")); status != 201 {
		t.Fatalf("escaped slash: %d %s", status, body)
	}
	if got := c.run("esc", "open('/work/sub/file.txt').read()"); string(got.Result) != `"nested"` {
		t.Fatalf("nested: %s", got.Result)
	}
}

// TestFilesLimits: uploads over the file limit are 413 files_too_large
// (declared or not), a state over the size cap 413 state_too_large, code
// writing past the limit gets OSError, and files can be turned off.
func TestFilesLimits(t *testing.T) {
	c := newServer(t, httpapi.Options{MaxFileBytes: 1000}).client("")
	status, _, body := c.do("PUT", "/state/lim/files/big.bin", bytes.Repeat([]byte("x"), 2000))
	wantError(t, "declared too large", status, body, 413, "files_too_large")
	req, _ := http.NewRequest("PUT", c.s.srv.URL+"/state/lim/files/big.bin", struct{ *bytes.Reader }{bytes.NewReader(bytes.Repeat([]byte("x"), 2000))})
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 413 {
		t.Fatalf("chunked upload: %v %v", resp, err)
	}
	resp.Body.Close()
	if status, _, body := c.do("PUT", "/state/lim/files/a.bin", bytes.Repeat([]byte("x"), 900)); status != 201 {
		t.Fatalf("within the limit: %d %s", status, body)
	}
	status, _, body = c.do("PUT", "/state/lim/files/b.bin", bytes.Repeat([]byte("x"), 200))
	wantError(t, "the total over the limit", status, body, 413, "files_too_large")
	_, resp2, _ := c.exec(map[string]any{"session_id": "lim", "code": "open('c.bin', 'wb').write(b'x' * 500)"})
	if resp2 == nil || resp2.Error == nil || resp2.Error.Type != "OSError" || !strings.Contains(resp2.Error.Message, "No space left on device") {
		t.Fatalf("code past the limit: %+v", resp2)
	}

	// Random text does not compress: within the file limit, over the state's.
	small := newServer(t, httpapi.Options{Session: session.Options{MaxStateSize: 4000}}).client("")
	noise := make([]byte, 3900)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rnd.IntN(256))
	}
	status, _, body = small.do("PUT", "/state/tiny/files/noise.bin", noise)
	wantError(t, "state over its cap", status, body, 413, "state_too_large")

	off := newServer(t, httpapi.Options{MaxFileBytes: -1}).client("")
	status, _, body = off.do("GET", "/state/x/files", nil)
	wantError(t, "files off", status, body, 404, "files_disabled")
	_, resp2, _ = off.exec(map[string]any{"code": "open('/work/x', 'w')"})
	if resp2 == nil || resp2.Error == nil || resp2.Error.Type != "PermissionError" {
		t.Fatalf("files off, code: %+v", resp2)
	}
}

// racingStore runs hook once, after the first Get of id: another writer
// storing the session between a request's load and its save.
type racingStore struct {
	store.Store
	id   string
	once sync.Once
	hook func()
}

func (r *racingStore) Get(ctx context.Context, id string) (store.Object, error) {
	obj, err := r.Store.Get(ctx, id)
	if id == r.id && r.hook != nil {
		r.once.Do(r.hook)
	}
	return obj, err
}

// TestFilesConflicts: an upload that races an execution wins or loses by
// compare-and-set, never both: the execution that loaded before the upload
// gets 409, and an upload whose session changed after it loaded gets 409.
func TestFilesConflicts(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	wait := runtime.OSFunc(func(_ context.Context, call *runtime.OSCall) (object.Value, error) {
		if call.Name == "os.getenv" {
			started <- struct{}{}
			<-release
			return object.None{}, nil
		}
		return nil, runtime.ErrNotHandled
	})
	srv := newServer(t, httpapi.Options{OS: wait})
	c := srv.client("")
	c.run("race", "open('n.txt', 'w').write('0')")

	var wg sync.WaitGroup
	var status int
	var e apiErr
	wg.Add(1)
	go func() {
		defer wg.Done()
		status, _, e = c.exec(map[string]any{"session_id": "race", "code": "import os\nos.getenv('X')\nopen('n.txt', 'w').write('exec')"})
	}()
	<-started
	if st, _, body := c.do("PUT", "/state/race/files/n.txt", []byte("upload")); st != 200 {
		t.Fatalf("upload during the execution: %d %s", st, body)
	}
	close(release)
	wg.Wait()
	if status != http.StatusConflict || e.Error != "conflict" {
		t.Fatalf("execution after the upload: %d %+v, want 409", status, e)
	}
	if _, _, body := c.do("GET", "/state/race/files/n.txt", nil); string(body) != "upload" {
		t.Fatalf("n.txt = %q", body)
	}

	// The other way round: a store write between the upload's load and save.
	inner := memstore.New(memstore.Options{})
	var hooked atomic.Bool
	rs := &racingStore{Store: inner, id: "public/race2"}
	srv2 := newServer(t, httpapi.Options{Session: session.Options{Store: rs}})
	c2 := srv2.client("")
	c2.run("race2", "x = 1")
	rs.hook = func() {
		obj, err := inner.Get(context.Background(), "public/race2")
		if err == nil {
			_, err = inner.Put(context.Background(), "public/race2", obj.Data, store.Cond{})
		}
		hooked.Store(err == nil)
	}
	status, _, body := c2.do("PUT", "/state/race2/files/late.txt", []byte("late"))
	wantError(t, "upload after another write", status, body, 409, "conflict")
	if !hooked.Load() {
		t.Fatal("the racing write did not happen")
	}
	l := c2.listFiles("race2")
	if len(l.Files) != 0 {
		t.Fatalf("the refused upload was stored: %+v", l.Files)
	}
}
