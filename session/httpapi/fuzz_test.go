package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// FuzzExecRequest sends arbitrary bytes as the body of POST /exec through
// the real handler and interpreter: never a panic, never a 5xx, and every
// answer is JSON: an ExecResponse, or an error with a code and a message.
// The seeds run with `go test`; `go test -fuzz FuzzExecRequest` explores.
func FuzzExecRequest(f *testing.F) {
	for _, seed := range []string{
		`{"code": "1 + 1"}`,
		`{"code": "x = [1, 2]\nx", "session_id": "fuzz-1", "inputs": {"a": 1, "b": [true, null, "s"]}}`,
		`{"code": "print('hi')", "lang": "py", "entity_id": "e", "user_id": "u"}`,
		`{"code": "while True:\n    pass"}`,
		`{"code": "x = 10**10**7"}`,
		`{"code": "'a' * (40 * 2**20)"}`,
		`{"code": "def f(): f()\nf()", "limits": {"recursion": 20}}`,
		`{"code": "raise ValueError('x' * 100000)"}`,
		`{"code": "import time\ntime.sleep(5)"}`,
		`{"code": "1", "limits": {"duration_ms": 9223372036854775807, "memory_bytes": 9223372036854775807, "result_bytes": 1, "output_bytes": 1}}`,
		`{"code": "1", "limits": {"duration_ms": -1}}`,
		`{"code": "1", "limits": {"recursion": 1e30}}`,
		`{"code": "1", "session_id": "../../etc/passwd"}`,
		`{"code": "a", "inputs": {"a": ` + string(bytes.Repeat([]byte("["), 300)) + string(bytes.Repeat([]byte("]"), 300)) + `}}`,
		`{"code": "a", "inputs": {"a": 1e400}}`,
		`{"code": "a", "inputs": {"1a": 1}}`,
		`{"code": "\u0000"}`,
		`{"code": "` + "\xff\xfe" + `"}`,
		`{"code": 5}`,
		`{"code": "1", "lang": "js"}`,
		`{"code": "   "}`,
		`[]`,
		`null`,
		`"code"`,
		`{`,
		``,
		"\x00\x01\x02",
		`{"code": "1"} trailing`,
		`{"code": "1", "code": "2"}`,
	} {
		f.Add([]byte(seed))
	}
	h, err := httpapi.New(httpapi.Options{
		Keeper:  newKeeper(f, nil, session.ManagerOptions{}),
		Session: session.Options{Store: memstore.New(memstore.Options{}), SigningKey: testKey, Limits: runtime.Limits{MaxDuration: 300 * time.Millisecond, MaxMemory: 16 << 20, MaxOutput: 4 << 10, MaxResult: 64 << 10}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxBody: 64 << 10,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/exec", bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: status %d %s", body, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%q: content type %q", body, ct)
		}
		if rec.Code == http.StatusOK {
			var resp httpapi.ExecResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.SessionID == "" {
				t.Fatalf("%q: 200 with %s (%v)", body, rec.Body, err)
			}
			return
		}
		var e httpapi.ErrorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || e.Message == "" {
			t.Fatalf("%q: status %d with %s (%v)", body, rec.Code, rec.Body, err)
		}
	})
}
