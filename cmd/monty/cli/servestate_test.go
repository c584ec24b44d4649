//go:build !monty_lean

package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/storetest"
)

// servedLog collects a running server's log lines.
type servedLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *servedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// startServe runs `monty serve args...` on a free port until the test
// ends, and returns its address and log (JSON lines).
func startServe(t *testing.T, args ...string) (string, *servedLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs, logw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...), nil, io.Discard, logw)
		logw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("serve exit %d", code)
		}
	})
	log := &servedLog{}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			log.mu.Lock()
			log.lines = append(log.lines, sc.Text())
			log.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
		close(addr)
	}()
	a, ok := <-addr
	if !ok {
		t.Fatalf("the server did not start: %s", log)
	}
	return a, log
}

// call sends a request to a served API and decodes the JSON answer.
func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, out
}

// TestServeStateSettings runs servers with seed 004's settings given by
// flags and by environment variables, on a directory store holding a
// damaged file.
func TestServeStateSettings(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	dir := t.TempDir()
	damage := func(id string) {
		path := filepath.Join(dir, fmt.Sprintf("%x.session", sha256.Sum256([]byte("public/"+id))))
		if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	addr, log := startServe(t, "--store", dir, "--state-ttl", "7200", "--state-capture-on-error")
	base := "http://" + addr
	if status, out := call(t, "GET", base+"/health", ""); status != 200 || out["status"] != "ok" {
		t.Fatalf("/health: %d %v", status, out)
	}
	if status, out := call(t, "GET", base+"/health/store", ""); status != 200 || out["status"] != "ok" || out["store"] != "dirstore" {
		t.Fatalf("/health/store: %d %v", status, out)
	}
	// The TTL applies to the directory store.
	call(t, "POST", base+"/exec", `{"session_id": "a", "code": "x = 1"}`)
	_, info := call(t, "GET", base+"/state/a/info", "")
	expires, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(info["expires_at"]))
	modified, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(info["modified_at"]))
	if d := expires.Sub(modified); d != 2*time.Hour {
		t.Errorf("--state-ttl 7200: the state lives %v (info %v)", d, info)
	}
	// Capture on error.
	call(t, "POST", base+"/exec", `{"session_id": "a", "code": "x = 2\nraise ValueError()"}`)
	if _, out := call(t, "POST", base+"/exec", `{"session_id": "a", "code": "x"}`); out["result"] != 2.0 {
		t.Errorf("--state-capture-on-error: x = %v after the call that raised", out["result"])
	}
	// Damaged state: a fresh start with a warning and a log record.
	damage("a")
	status, out := call(t, "POST", base+"/exec", `{"session_id": "a", "code": "'x' in locals()"}`)
	w, _ := out["state_warning"].(map[string]any)
	if status != 200 || out["result"] != false || w["code"] != "state_corrupt" || !strings.HasPrefix(fmt.Sprint(w["quarantined_as"]), "a.corrupt.") {
		t.Fatalf("exec on a damaged file: %d %v", status, out)
	}
	if s := log.String(); !strings.Contains(s, `"msg":"session state"`) || !strings.Contains(s, `"on_corrupt_state":"fresh"`) ||
		!strings.Contains(s, "could not be loaded") || !strings.Contains(s, `"store":"dirstore ttl=2h0m0s"`) {
		t.Errorf("log:\n%s", s)
	}

	// The settings from the environment, the other way round.
	t.Setenv("MONTY_ON_CORRUPT_STATE", "fail")
	addr, _ = startServe(t, "--store", dir)
	damage("b")
	if status, out := call(t, "POST", "http://"+addr+"/exec", `{"session_id": "b", "code": "1"}`); status != 500 || out["error"] != "state_corrupt" {
		t.Errorf("MONTY_ON_CORRUPT_STATE=fail: %d %v", status, out)
	}
	t.Setenv("MONTY_STATE_PERSISTENCE", "false")
	addr, _ = startServe(t, "--store", dir)
	base = "http://" + addr
	if status, out := call(t, "POST", base+"/exec", `{"session_id": "c", "code": "y = 1"}`); status != 200 || out["state_saved"] != false || out["state_note"] == nil {
		t.Errorf("MONTY_STATE_PERSISTENCE=false: %d %v", status, out)
	}
	if status, _ := call(t, "GET", base+"/state/c/info", ""); status != 200 {
		t.Errorf("info: %d", status)
	}
	if _, out := call(t, "GET", base+"/state/c/info", ""); out["exists"] != false {
		t.Errorf("MONTY_STATE_PERSISTENCE=false stored state: %v", out)
	}
	if status, out := call(t, "POST", base+"/state/c", "blob"); status != 403 || out["error"] != "persistence_disabled" {
		t.Errorf("upload with persistence off: %d %v", status, out)
	}
}

// TestServeArchiveSettings: the archive settings reach a tiered store of
// Redis and S3 (the archiver copies state into S3 after
// --state-archive-after), and are refused without a tiered store.
func TestServeArchiveSettings(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	prefix := storetest.UniquePrefix(t)
	env := storetest.S3(t)
	spec := storetest.RedisURL(t) + "?prefix=monty-" + prefix + "/," +
		fmt.Sprintf("s3://%s:%s@%s/%s?prefix=%s/", env.AccessKey, env.SecretKey, env.Endpoint, env.Bucket, prefix)
	t.Setenv("MONTY_STATE_ARCHIVE_AFTER", "1s")
	addr, log := startServe(t, "--store", spec, "--state-ttl", "1h", "--state-archive-ttl", "2d", "--state-archive-interval", "1s")
	base := "http://" + addr
	if status, out := call(t, "GET", base+"/health/store", ""); status != 200 || out["store"] != "tiered" || len(out["checks"].([]any)) != 5 {
		t.Fatalf("/health/store: %d %v", status, out)
	}
	call(t, "POST", base+"/exec", `{"session_id": "arch", "code": "x = 1"}`)
	if _, info := call(t, "GET", base+"/state/arch/info", ""); info["source"] != "hot" {
		t.Fatalf("info: %v", info)
	}
	// The archiver copies it into S3 once it has gone 1s without a write
	// (it runs in the server: poll the bucket).
	cold, err := s3store.New(context.Background(), s3store.Options{Endpoint: env.Endpoint, Bucket: env.Bucket, AccessKey: env.AccessKey, SecretKey: env.SecretKey, Prefix: prefix + "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, err := cold.Stat(context.Background(), "public/arch")
		if err == nil {
			if d := info.Expires.Sub(info.Modified); d != 48*time.Hour {
				t.Errorf("--state-archive-ttl 2d: the archived state lives %v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the state was not archived within 20s: %v", err)
		}
	}
	if s := log.String(); !strings.Contains(s, "tiered ttl=1h0m0s archive_ttl=48h0m0s archive_after=1s archive_interval=1s") || strings.Contains(s, env.SecretKey) {
		t.Errorf("log:\n%s", s)
	}

	var errOut bytes.Buffer
	code := Run(context.Background(), []string{"serve", "--store", "mem:", "--state-archive-after", "1h"}, nil, io.Discard, &errOut)
	if code != ExitUsage || !strings.Contains(errOut.String(), "need a tiered store") {
		t.Errorf("--state-archive-after without HOT,COLD: exit %d %q", code, errOut.String())
	}
}

func TestServeStateFlagErrors(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--state-ttl", "soon"}, "", "--state-ttl"},
		{[]string{"--state-ttl", "-5s"}, "", "--state-ttl"},
		{[]string{"--state-archive-after", "never"}, "", "--state-archive-after"},
		{[]string{"--on-corrupt-state", "ignore"}, "", "use fresh or fail"},
		{[]string{"--state-persistence=maybe"}, "", "state-persistence"},
		{nil, "MONTY_STATE_TTL=later", "--state-ttl"},
		{nil, "MONTY_STATE_PERSISTENCE=perhaps", "MONTY_STATE_PERSISTENCE"},
		{nil, "MONTY_ON_CORRUPT_STATE=ignore", "use fresh or fail"},
		{[]string{"--store", "mem:?ttl=1h", "--state-ttl", "2h"}, "", "given twice"},
	} {
		if tc.env != "" {
			k, v, _ := strings.Cut(tc.env, "=")
			t.Setenv(k, v)
		}
		args := append([]string{"serve", "--store", "mem:"}, tc.args...)
		var errOut bytes.Buffer
		code := Run(context.Background(), args, nil, io.Discard, &errOut)
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("serve %v %s: exit %d, stderr %q; want a usage error mentioning %q", tc.args, tc.env, code, errOut.String(), tc.want)
		}
		if tc.env != "" {
			k, _, _ := strings.Cut(tc.env, "=")
			os.Unsetenv(k)
		}
	}
}

func TestParseStateDuration(t *testing.T) {
	for _, tc := range []struct {
		in    string
		never bool
		want  time.Duration
		bad   bool
	}{
		{"", true, 0, false},
		{"7200", true, 2 * time.Hour, false},
		{"90s", true, 90 * time.Second, false},
		{"7d", true, 7 * 24 * time.Hour, false},
		{"1.5d", false, 36 * time.Hour, false},
		{"never", true, -1, false},
		{"0", true, -1, false},
		{"never", false, 0, true},
		{"0", false, 0, true},
		{"-1h", true, 0, true},
		{"xd", true, 0, true},
		{"soon", true, 0, true},
	} {
		got, err := parseStateDuration(tc.in, tc.never)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseStateDuration(%q, %v) = %v, %v", tc.in, tc.never, got, err)
		}
	}
}
