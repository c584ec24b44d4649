package httpapi_test

import (
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
