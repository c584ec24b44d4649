package servetest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeAnswersBeforeCompiling: with nothing cached, monty serve
// answers its first request on wazero's interpreter engine while the
// machine code compiles in the background, then switches to it, and the
// machine code lands in the cache for the next process.
func TestServeAnswersBeforeCompiling(t *testing.T) {
	const key = "startup-test-api-key"
	dir := t.TempDir()
	srv := serve(t, "--store", "mem:", "--api-key", key, "--cache-dir", dir)
	exec := func() {
		t.Helper()
		status, _, body, err := srv.do("POST", "/exec", []byte(`{"code": "1 + 1"}`), "x-api-key", key)
		if err != nil || status != 200 || !strings.Contains(string(body), `"result":2`) {
			t.Fatalf("POST /exec: %d %s %v\n%s", status, body, err, srv.log())
		}
	}
	exec()
	log := srv.log()
	if !strings.Contains(log, `"event":"fast_start"`) {
		t.Fatalf("serve did not start on the interpreter engine:\n%s", log)
	}
	if strings.Contains(log, `"event":"switched"`) {
		t.Fatalf("the first request waited for the compilation:\n%s", log)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(srv.log(), `"event":"switched"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no switch to compiled code:\n%s", srv.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	exec()
	if ready, _ := filepath.Glob(filepath.Join(dir, "module-*", "ready")); len(ready) != 1 {
		t.Fatalf("the cache was not filled: %v", ready)
	}
}
