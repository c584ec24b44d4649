package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/internal/sessionbench"
	"github.com/monty-go/monty/session/store/dirstore"
)

// BenchmarkExec measures POST /exec of a tiny program over loopback HTTP
// with a memory store: a new session per request, and continuing one.
func BenchmarkExec(b *testing.B) {
	for _, bc := range []struct {
		name    string
		session bool
	}{{"new-session", false}, {"continue-session", true}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := newServer(b, httpapi.Options{})
			c := srv.client("")
			req := map[string]any{"code": "try:\n    n += 1\nexcept NameError:\n    n = 1\nn"}
			if bc.session {
				req["session_id"] = fmt.Sprintf("bench-%d", b.N)
			}
			for b.Loop() {
				if status, resp, _ := c.exec(req); status != 200 || resp.Error != nil {
					b.Fatalf("status %d", status)
				}
			}
		})
	}
}

// BenchmarkPauseResume: one round trip of a client tool — /exec pauses at
// the call and stores the paused run, /runs/{run_id}/resume loads it and
// finishes — next to a plain /exec of the same code with the tool's value
// in place (report as the ratio of the two). Each iteration uses a new
// session, so that a session's growing history does not blur the figures.
func BenchmarkPauseResume(b *testing.B) {
	srv := newServer(b, httpapi.Options{})
	c := srv.client("")
	b.Run("plain-exec", func(b *testing.B) {
		for b.Loop() {
			if status, resp, _ := c.exec(map[string]any{"code": "n = 41\nn + 1"}); status != 200 || resp.Error != nil {
				b.Fatalf("status %d", status)
			}
		}
	})
	b.Run("pause-store-resume", func(b *testing.B) {
		req := map[string]any{"code": "n = ask()\nn + 1", "tools": []map[string]any{{"name": "ask"}}}
		body, _ := json.Marshal(req)
		for b.Loop() {
			status, _, data := c.do("POST", "/exec", body)
			var p httpapi.ExecResponse
			if status != 200 || json.Unmarshal(data, &p) != nil || p.Status != httpapi.StatusPaused {
				b.Fatalf("exec: %d %s", status, data)
			}
			res, _ := json.Marshal(map[string]any{"results": []map[string]any{{"id": p.Calls[0].ID, "value": 41}}})
			status, _, data = c.do("POST", "/runs/"+p.RunID+"/resume", res)
			if status != 200 {
				b.Fatalf("resume: %d %s", status, data)
			}
		}
	})
}

// httpSurface is a session continued by POST /exec on a server over a
// directory store (sessionbench.Surface); its state is saved and restored
// by GET and POST /state/{id}.
type httpSurface struct {
	c  *client
	id string
}

func (s *httpSurface) Exec(code string) (string, error) {
	status, resp, e := s.c.exec(map[string]any{"code": code, "session_id": s.id})
	switch {
	case status != http.StatusOK:
		return "", fmt.Errorf("status %d: %s", status, e.Message)
	case resp.Error != nil:
		return "", fmt.Errorf("%s: %s", resp.Error.Type, resp.Error.Message)
	case resp.StateWarning != nil:
		return "", fmt.Errorf("state warning: %+v", *resp.StateWarning)
	}
	return resp.ResultRepr, nil
}

func (s *httpSurface) Save() (sessionbench.Entries, error) {
	status, _, data := s.c.do("GET", "/state/"+s.id, nil)
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /state: status %d: %s", status, data)
	}
	return sessionbench.Entries{s.id: data}, nil
}

func (s *httpSurface) Restore(entries sessionbench.Entries) error {
	status, _, data := s.c.do("POST", "/state/"+s.id, entries[s.id])
	if status != http.StatusCreated {
		return fmt.Errorf("POST /state: status %d: %s", status, data)
	}
	return nil
}

// BenchmarkContinueSession measures POST /exec of one more snippet in a
// session that already ran 10, 300 or 1,000 (package sessionbench), on a
// server over a directory store, as `monty serve --store DIR` continues an
// agent's session: the cost of a call at the 1,000th snippet against the
// 10th.
//
//	go test -run '^$' -bench 'ContinueSession' -benchtime 40x ./session/httpapi/
func BenchmarkContinueSession(b *testing.B) {
	st, err := dirstore.Open(b.TempDir(), dirstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv := newServer(b, httpapi.Options{Session: session.Options{Store: st}})
	sessionbench.Run(b, "http", &httpSurface{c: srv.client(""), id: "bench-continue"})
}
