package servetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rss is the resident memory of the process, in bytes (Linux).
func (in *instance) rss(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", in.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc status")
	return 0
}

// limitAnswer is a 422 (or other error) answer.
type limitAnswer struct {
	Error, Message, SessionID, Stdout string
}

// TestHostileCodeLimits replays the hostile requests against the
// built binary with lean limits: each is a 4xx with the limit's code and
// a short answer, never a 5xx, and the server stays small and usable.
func TestHostileCodeLimits(t *testing.T) {
	const key = "hostile-test-api-key"
	srv := serve(t, "--store", "mem:", "--api-key", key, "--api-key", "other-test-api-key",
		"--max-memory", "48MiB", "--max-duration", "2s", "--concurrency", "4")
	exec := func(id, code string) (int, []byte, time.Duration) {
		t.Helper()
		req := map[string]any{"code": code}
		if id != "" {
			req["session_id"] = id
		}
		start := time.Now()
		status, _, data, err := srv.do("POST", "/exec", mustJSON(req), "x-api-key", key)
		if err != nil {
			t.Fatalf("%q: %v", code, err)
		}
		return status, data, time.Since(start)
	}
	want := func(what string, status int, data []byte, code string) {
		t.Helper()
		var a limitAnswer
		if status != 422 || json.Unmarshal(data, &a) != nil || a.Error != code || a.Message == "" || strings.Contains(string(data), "wasm") {
			t.Fatalf("%s: %d %.500s, want 422 %s", what, status, data, code)
		}
		if len(data) > 64<<10 {
			t.Fatalf("%s: a %d-byte answer", what, len(data))
		}
	}
	before := srv.rss(t)

	status, data, took := exec("", "import time\nwhile True:\n    time.sleep(0.05)")
	want("sleep loop", status, data, "time_limit")
	if took > 4*time.Second {
		t.Fatalf("sleep loop under 2s ended after %v", took)
	}
	status, data, took = exec("", "x = 10**10**7")
	want("10**10**7", status, data, "int_size_limit")
	if took > 2*time.Second {
		t.Fatalf("10**10**7 took %v", took)
	}
	status, data, _ = exec("", "'a' * (40 * 2**20)")
	want("40 MiB result", status, data, "result_size_limit")
	status, data, _ = exec("", "import asyncio\nawait asyncio.gather(*[asyncio.sleep(0.001) for _ in range(2000)])")
	want("2000 gathered sleeps", status, data, "host_call_limit")
	if status, data, _ = exec("big-value", "s = 'a' * 10**6"); status != 200 {
		t.Fatalf("s = 'a' * 10**6: %d %s", status, data)
	}
	status, data, _ = exec("big-value", "[s] * 300")
	want("[s] * 300", status, data, "result_size_limit")
	var r execResult
	if status, data, _ = exec("big-value", "len(s)"); status != 200 || json.Unmarshal(data, &r) != nil || string(r.Result) != "1000000" {
		t.Fatalf("session after [s] * 300: %d %s", status, data)
	}

	// Blobs are bound to their session and API key.
	_, _, blob, err := srv.do("GET", "/state/big-value", nil, "x-api-key", key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, id string }{{"other-test-api-key", "big-value"}, {key, "another-id"}} {
		status, _, data, err := srv.do("POST", "/state/"+tc.id, blob, "x-api-key", tc.key)
		if err != nil || status != 400 || !strings.Contains(string(data), `"invalid_state"`) {
			t.Fatalf("upload under %s/%s: %d %s %v", tc.key, tc.id, status, data, err)
		}
	}

	// A small blob declaring a 60 MiB dump, written by an instance with
	// more memory and the same keys, uploaded 16 times at once: refused
	// (413, or 429 past the slots) without the server expanding it.
	roomy := serve(t, "--store", "mem:", "--api-key", key, "--max-memory", "128MiB", "--max-duration", "5s")
	status, _, data, err = roomy.do("POST", "/exec", mustJSON(map[string]any{"session_id": "bomb", "code": "s = 'a' * (60 * 2**20)"}), "x-api-key", key)
	if err != nil || status != 200 {
		t.Fatalf("making the blob: %d %s %v", status, data, err)
	}
	_, _, bomb, err := roomy.do("GET", "/state/bomb", nil, "x-api-key", key)
	if err != nil || len(bomb) > 1<<20 {
		t.Fatalf("blob of %d bytes: %v", len(bomb), err)
	}
	roomy.stop()
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, data, err := srv.do("POST", "/state/bomb", bomb, "x-api-key", key)
			if err != nil || (status != 413 && status != 429) {
				errs <- fmt.Sprintf("%d %s %v", status, data, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("upload of a blob declaring 60 MiB: %s", e)
	}
	after := srv.rss(t)
	t.Logf("server RSS %d MiB before the hostile requests, %d MiB after", before>>20, after>>20)
	// One execution may take up to the 48 MiB limit (plus the hard
	// ceiling's slack); the issue saw 2.27 GB after one request.
	if after-before > 250<<20 {
		t.Fatalf("server RSS grew by %d MiB", (after-before)>>20)
	}
	if status, data, _ = exec("", "1 + 1"); status != 200 {
		t.Fatalf("server unusable afterwards: %d %s", status, data)
	}
}
