// Package mcptest gives tests the command lines of real MCP servers that
// others wrote, installed at pinned versions by scripts/mcpservers.sh, for
// tests that connect to them as an MCP client:
//
//   - Everything: the protocol's reference "everything" server
//     (@modelcontextprotocol/server-everything from npm) over stdio;
//   - EverythingHTTP and StartEverythingHTTP: the same server over
//     streamable HTTP;
//   - Time: mcp-server-time from PyPI over stdio (structured output);
//   - PythonEcho: a server of ours on the official MCP Python SDK, which
//     says what it received.
//
// CallTool is the client side's call of a tool, for tests of servers.
//
// The command lines come from the MONTY_TEST_MCP_* variables that
// `eval "$(scripts/mcpservers.sh env)"` sets (scripts/test.sh does this);
// when one is unset the test fails and says so.
package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The variables scripts/mcpservers.sh exports, each a command line whose
// words are separated by spaces.
const (
	EverythingVar     = "MONTY_TEST_MCP_EVERYTHING"
	EverythingHTTPVar = "MONTY_TEST_MCP_EVERYTHING_HTTP"
	TimeVar           = "MONTY_TEST_MCP_TIME"
)

// Env returns the command line in the environment variable name split into
// words (argv), failing t when it is unset or empty.
func Env(t testing.TB, name string) []string {
	t.Helper()
	argv := strings.Fields(os.Getenv(name))
	if len(argv) == 0 {
		if testing.Short() {
			t.Skip("needs the MCP servers of scripts/mcpservers.sh: -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatalf("%s is not set: these tests need the MCP servers installed by scripts/mcpservers.sh; run `eval \"$(scripts/mcpservers.sh env)\"` from the repository root (scripts/test.sh does this), then run the tests again", name)
	}
	return argv
}

// Python returns the Python of scripts/pyclients.sh's environment
// (MONTY_TEST_PYTHON), which has the official MCP Python SDK, for a test
// that runs what (a client or a server of the SDK); t is skipped under
// -short, and fails when it is unset.
func Python(t testing.TB, what string) string {
	t.Helper()
	py := os.Getenv("MONTY_TEST_PYTHON")
	if py == "" {
		if testing.Short() {
			t.Skip("needs the official MCP Python SDK: -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatal("MONTY_TEST_PYTHON is not set: this test runs " + what + " of the official MCP Python SDK; run " +
			"`eval \"$(scripts/pyclients.sh env)\"` from the repository root (scripts/test.sh does this), then run the tests again")
	}
	return py
}

// Everything returns the argv that starts the reference "everything" server
// on stdio (MONTY_TEST_MCP_EVERYTHING: node, its entry point, "stdio"), for
// mcp.CommandTransport. Its tools include echo, get-sum, get-structured-content
// (with an output schema), trigger-long-running-operation (progress
// notifications when the call carries a progress token) and
// get-annotated-message; a few more are registered after initialization,
// depending on the client's capabilities, with a tools/list_changed
// notification.
func Everything(t testing.TB) []string {
	t.Helper()
	return Env(t, EverythingVar)
}

// EverythingHTTP returns the argv and the environment (os.Environ() plus
// PORT) that start the "everything" server in streamable HTTP mode on port
// (MONTY_TEST_MCP_EVERYTHING_HTTP), to use as exec.Cmd's Args and Env. The
// server then answers at http://127.0.0.1:port/mcp (it listens on every
// interface), prints "MCP Streamable HTTP Server listening on port N" on
// stderr once it accepts connections, and logs every request on stdout.
// The caller picks a free port: with port 0 the server would take one but
// not say which. StartEverythingHTTP does all of this.
func EverythingHTTP(t testing.TB, port int) (argv, env []string) {
	t.Helper()
	argv = Env(t, EverythingHTTPVar)
	env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	return argv, env
}

// StartEverythingHTTP starts the "everything" server in streamable HTTP mode
// on a free loopback port, waits until it accepts connections, and returns
// its endpoint (http://127.0.0.1:PORT/mcp) for mcp.StreamableClientTransport.
// The server is killed when the test ends; its stderr is shown if it fails
// to start.
func StartEverythingHTTP(t testing.TB) string {
	t.Helper()
	var lastErr error
	for range 3 { // another process may take the free port before the server does
		url, err := startEverythingHTTP(t)
		if err == nil {
			return url
		}
		lastErr = err
		if !strings.Contains(err.Error(), "already in use") {
			break
		}
	}
	t.Fatalf("starting the MCP everything server over streamable HTTP: %v", lastErr)
	return ""
}

func startEverythingHTTP(t testing.TB) (string, error) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		return "", err
	}
	argv, env := EverythingHTTP(t, port)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr // stdout (a line per request) is discarded
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return "", fmt.Errorf("%s exited before accepting connections: %s", strings.Join(argv, " "), stderr.String())
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("%s did not accept connections on %s within 30 s: %s", strings.Join(argv, " "), addr, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(stop)
	return "http://" + addr + "/mcp", nil
}

// freePort returns a loopback TCP port that nobody listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Time returns the argv that starts mcp-server-time on stdio with UTC as
// its local timezone (MONTY_TEST_MCP_TIME), for mcp.CommandTransport. Its
// tools get_current_time and convert_time return structured content and
// declare output schemas; a bad timezone gives an isError result.
func Time(t testing.TB) []string {
	t.Helper()
	return Env(t, TimeVar)
}

// PythonEcho returns the argv that starts testdata/mcp/echo_server.py on
// stdio under the Python of mcp-server-time's environment (which has the
// official MCP Python SDK): its tools echo(x) and as_float(x: float)
// return the type and repr of what the server received.
func PythonEcho(t testing.TB) []string {
	t.Helper()
	python := filepath.Join(filepath.Dir(Time(t)[0]), "python")
	_, file, _, _ := goruntime.Caller(0)
	return []string{python, filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "mcp", "echo_server.py")}
}

// lockedBuffer is a bytes.Buffer that a child process's output may be
// copied into while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CallTool calls tool with args through cs, waiting a minute at most, and
// returns the text of the result's text contents joined and the result;
// it fails t when the call itself fails (a tool error is a result).
func CallTool(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res
}
