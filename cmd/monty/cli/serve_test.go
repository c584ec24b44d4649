//go:build !monty_lean

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

func TestServeConfigErrors(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "")
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("a-signing-key-long-enough\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "mem:"}, "signing key of at least 16 bytes is required"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--log-format", "xml"}, "--log-format"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--api-key", "short"}, "shorter than 8"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--max-memory", "lots"}, "--max-memory"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--max-memory", "1e30"}, "--max-memory"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--max-result", "0"}, "--max-result"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--max-result", "2GiB"}, "--max-result"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--tls-cert", "c.pem"}, "--tls-cert and --tls-key"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "extra"}, "unexpected argument"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--mount", keyFile + ":/data"}, "is not a directory"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--mount", t.TempDir() + ":/data:bogus"}, `unknown mode "bogus"`},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--mount", t.TempDir() + ":/work/in"}, "each session's own files"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--run-ttl", "-1s"}, "--run-ttl must not be negative"},
		{[]string{"--store", "mem:", "--signing-key-file", keyFile, "--console", "maybe"}, `--console: "maybe": want on or off`},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), append([]string{"serve"}, tc.args...), nil, &out, &errOut)
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut.String(), ExitUsage, tc.want)
		}
	}
}

func TestServeEnvAndKeys(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("# team keys\nkey-from-file-1\n\nkey-from-file-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MONTY_API_KEYS", "env-key-0001, env-key-0002")
	got, err := apiKeys(nil, keys)
	if err != nil || strings.Join(got, " ") != "env-key-0001 env-key-0002 key-from-file-1 key-from-file-2" {
		t.Fatalf("apiKeys: %v %v", got, err)
	}
	// Flags replace MONTY_API_KEYS.
	if got, _ := apiKeys([]string{"flag-key-001"}, ""); strings.Join(got, " ") != "flag-key-001" {
		t.Fatalf("apiKeys with a flag: %v", got)
	}
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	t.Setenv("MONTY_MAX_DURATION", "soon")
	var errOut bytes.Buffer
	if code := Run(context.Background(), []string{"serve", "--store", "mem:"}, nil, &bytes.Buffer{}, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), "MONTY_MAX_DURATION") {
		t.Fatalf("bad MONTY_MAX_DURATION: exit %d %q", code, errOut.String())
	}
}

func TestPrecompile(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := runtimetest.UnfinishedCache(t)
	t.Setenv("MONTY_CACHE_DIR", "off")
	if code := Run(context.Background(), []string{"precompile"}, nil, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), "the cache is off") {
		t.Fatalf("precompile with the cache off: exit %d %q", code, errOut.String())
	}
	if code := Run(context.Background(), []string{"precompile", "--no-checker", "--cache-dir", dir}, nil, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "compiled Monty") {
		t.Fatalf("precompile: exit %d %q %q", code, out.String(), errOut.String())
	}
	if ready, err := filepath.Glob(filepath.Join(dir, "module-*", "ready")); err != nil || len(ready) != 1 {
		t.Fatalf("cache dir after precompile: %v %v", ready, err)
	}
	out.Reset()
	t.Setenv("MONTY_CACHE_DIR", dir)
	if code := Run(context.Background(), []string{"precompile", "--no-checker"}, nil, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "already compiled in "+dir) {
		t.Fatalf("precompile again: exit %d %q %q", code, out.String(), errOut.String())
	}
}

// TestPrecompileChecker: precompile fills the cache with the type checker
// too (the default test cache, which scripts/test.sh warms).
func TestPrecompileChecker(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"precompile"}, nil, &out, &errOut); code != ExitOK ||
		!strings.Contains(out.String(), "type checker") || !strings.Contains(out.String(), runtime.DefaultCacheDir()) {
		t.Fatalf("precompile: exit %d %q %q", code, out.String(), errOut.String())
	}
}

// TestCompileNotice: on a terminal the CLI says, once, that it compiles and
// that this happens once; otherwise it stays quiet; cache warnings always
// show.
func TestCompileNotice(t *testing.T) {
	ctx := context.Background()
	emit := func(terminal bool, level slog.Level, msg string, attrs ...any) string {
		var buf bytes.Buffer
		slog.New(&noticeHandler{w: &buf, terminal: terminal}).Log(ctx, level, msg, attrs...)
		return buf.String()
	}
	start := emit(true, slog.LevelInfo, "compiling", "event", "compile_start", "cache_dir", "/c")
	if !strings.Contains(start, "compiling the Python interpreter") || !strings.Contains(start, "happens once") || !strings.Contains(start, "/c") || strings.Count(start, "\n") != 1 {
		t.Errorf("terminal compile notice: %q", start)
	}
	if got := emit(false, slog.LevelInfo, "compiling", "event", "compile_start"); got != "" {
		t.Errorf("compile notice without a terminal: %q", got)
	}
	if got := emit(true, slog.LevelInfo, "compiled", "event", "compile_done"); got != "" {
		t.Errorf("other info records: %q", got)
	}
	warn := emit(false, slog.LevelWarn, "the cache cannot be used", "event", "cache_unusable", "cache_dir", "/ro", "error", "read-only file system")
	if warn != "monty: warning: the cache cannot be used [/ro]: read-only file system\n" {
		t.Errorf("warning: %q", warn)
	}
}

// TestServeMaxResult: --max-result (MONTY_MAX_RESULT) sets the result
// bound, 16 MiB by default, at most --max-memory.
func TestServeMaxResult(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	for _, tc := range []struct {
		memory, result string
		want           int64
	}{
		{"256MiB", "16MiB", 16 << 20},
		{"256MiB", "1KiB", 1 << 10},
		{"8MiB", "16MiB", 8 << 20},
		{"", "64MiB", 64 << 20},
		{"0", "64MiB", 64 << 20},
	} {
		c := serveConfig{maxState: "50MiB", maxBody: "1MiB"}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c.limits = addLimitFlags(fs, serveLimits)
		if err := fs.Parse([]string{"--max-memory", tc.memory, "--max-result", tc.result}); err != nil {
			t.Fatal(err)
		}
		o, err := c.options()
		if err != nil || o.Session.Limits.MaxResult != tc.want {
			t.Errorf("--max-memory %q --max-result %q: MaxResult %d (%v), want %d", tc.memory, tc.result, o.Session.Limits.MaxResult, err, tc.want)
		}
	}
	if serveEnv["max-result"] != "MONTY_MAX_RESULT" {
		t.Fatal("--max-result has no environment variable")
	}
}

// TestServeMaxHostCalls: --max-host-calls (MONTY_MAX_HOST_CALLS) reaches
// the HTTP API's options: the runtime's default, a bound, or none (0).
func TestServeMaxHostCalls(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	for flagValue, want := range map[string]int{"": 1000, "7": 7, "0": -1} {
		c := serveConfig{maxState: "50MiB", maxBody: "1MiB"}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c.limits = addLimitFlags(fs, serveLimits)
		args := []string{}
		if flagValue != "" {
			args = []string{"--max-host-calls", flagValue}
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		o, err := c.options()
		if err != nil || o.Session.Limits.MaxHostCalls != want {
			t.Errorf("--max-host-calls %q: MaxHostCalls %d (%v), want %d", flagValue, o.Session.Limits.MaxHostCalls, err, want)
		}
	}
	if serveEnv["max-host-calls"] != "MONTY_MAX_HOST_CALLS" {
		t.Fatal("--max-host-calls has no environment variable")
	}
}

// TestServeMount runs a real server with an overlay mount: clients reach
// the operator's directory at its guest path only, share the overlay's
// changes, and the host directory never changes.
func TestServeMount(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs, logw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", "mem:", "--log-format", "json",
			"--mount", dir + ":/data:overlay", "--mount-write-limit", "1KB"}, nil, io.Discard, logw)
		logw.Close()
	}()
	var addr string
	sc := bufio.NewScanner(logs)
	for addr == "" && sc.Scan() {
		var rec struct {
			Msg    string   `json:"msg"`
			Addr   string   `json:"addr"`
			Mounts []string `json:"mounts"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
			addr = rec.Addr
			if len(rec.Mounts) != 1 || rec.Mounts[0] != dir+":/data:overlay" {
				t.Errorf("logged mounts %v", rec.Mounts)
			}
		}
	}
	if addr == "" {
		t.Fatalf("the server did not start: exit %d", <-done)
	}
	go io.Copy(io.Discard, logs)
	exec := func(code string) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"code": code})
		resp, err := http.Post("http://"+addr+"/exec", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /exec %q: %d %v %v", code, resp.StatusCode, out, err)
		}
		return out
	}
	errType := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		s, _ := e["type"].(string)
		return s
	}
	if out := exec("from pathlib import Path\nPath('/data/in.txt').write_text('changed')\nPath('/data/in.txt').read_text()"); out["result"] != "changed" {
		t.Errorf("write through the overlay: %v", out)
	}
	// Each request opens the mounts afresh: another request (another
	// client, maybe) does not see the first one's overlay writes.
	if out := exec("open('/data/in.txt').read()"); out["result"] != "from the host" {
		t.Errorf("read from another request: %v", out)
	}
	if out := exec("open('" + filepath.Join(dir, "in.txt") + "').read()"); errType(out) != "PermissionError" {
		t.Errorf("a host path from a client: %v", out)
	}
	if out := exec("open('/data/big', 'w').write('x' * 2000)"); errType(out) != "OSError" {
		t.Errorf("past the write limit: %v", out)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("serve exit %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.txt")); string(b) != "from the host" {
		t.Errorf("the host file changed: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the host directory changed: %v", entries)
	}
}
