package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/monty-go/monty/session/httpapi"
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
