// Package servetest runs the built monty binary's HTTP server (monty serve)
// on loopback: the seed's curl walkthrough, a load test with many sessions
// over two instances sharing Redis, a Redis restart under load, and a
// graceful shutdown.
package servetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the monty command, built once for this package's tests, or
// the one MONTY_TEST_BIN names (make test-aot runs TestHostileCodeLimits
// on the CLI built on the ahead-of-time engine).
var binary string

func TestMain(m *testing.M) {
	if binary = os.Getenv("MONTY_TEST_BIN"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "monty-serve-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "monty")
	build := exec.Command("go", "build", "-o", binary, "github.com/monty-go/monty/cmd/monty")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "building cmd/monty:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const signingKey = "servetest-signing-key-0123456789"

// instance is a running `monty serve`.
type instance struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	client *http.Client
	mu     sync.Mutex
	logs   bytes.Buffer
	// exited is closed when the process has exited, with waitErr set.
	exited  chan struct{}
	waitErr error
}

// serve starts monty serve with args on a free loopback port and waits
// until it listens. It is stopped (SIGTERM) when the test ends.
func serve(t *testing.T, args ...string) *instance {
	t.Helper()
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-timeout", "10s"}, args...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "MONTY_SIGNING_KEY="+signingKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, cmd: cmd, exited: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			in.mu.Lock()
			in.logs.WriteString(line + "\n")
			in.mu.Unlock()
			var rec struct{ Msg, URL string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.URL
			}
		}
		in.waitErr = cmd.Wait()
		close(in.exited)
	}()
	select {
	case in.url = <-listening:
	case <-in.exited:
		t.Fatalf("monty serve exited before listening: %v\n%s", in.waitErr, in.log())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("monty serve did not listen within 60s\n%s", in.log())
	}
	in.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // curl -k
	}}
	t.Cleanup(func() { in.stop() })
	return in
}

func (in *instance) log() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.logs.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (in *instance) stop() {
	select {
	case <-in.exited:
		return
	default:
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.exited:
		if in.waitErr != nil {
			in.t.Errorf("monty serve exited with %v after SIGTERM\n%s", in.waitErr, in.log())
		}
	case <-time.After(30 * time.Second):
		_ = in.cmd.Process.Kill()
		in.t.Errorf("monty serve did not stop within 30s of SIGTERM")
	}
}

// do sends a request; header is name, value pairs.
func (in *instance) do(method, path string, body []byte, header ...string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, in.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data, err
}

// freePort returns a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// execResult is the part of an /exec answer the tests read.
type execResult struct {
	SessionID string          `json:"session_id"`
	Stdout    string          `json:"stdout"`
	Result    json.RawMessage `json:"result"`
	ExitCode  int             `json:"exit_code"`
	Error     *struct {
		Type, Message string
	} `json:"error"`
}

// errorBody is a non-2xx answer.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
