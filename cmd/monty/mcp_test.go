package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// mcpClient starts `monty mcp` with args as a child process and connects
// the SDK's client to it over its stdin/stdout.
func mcpClient(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "monty-test", Version: "1"}, nil)
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and returns its text and whether it is a tool error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	text, res := mcptest.CallTool(t, cs, tool, args)
	return text, res.IsError
}

func TestMCPConversation(t *testing.T) {
	dir := t.TempDir()
	cs := mcpClient(t, "--store", dir, "--timeout", "1s")

	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	names := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = tool
	}
	require.Contains(t, names, "execute_python")
	require.Contains(t, names, "reset_session")
	schema, _ := names["execute_python"].InputSchema.(map[string]any)
	assert.Equal(t, []any{"code"}, schema["required"])
	assert.Contains(t, schema["properties"], "session_id")

	text, isErr := call(t, cs, "execute_python", map[string]any{"code": "def double(x):\n    return x * 2\ny = 21\nprint('defined')"})
	assert.False(t, isErr, text)
	assert.Equal(t, "defined", text)
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "double(y)"})
	assert.False(t, isErr, text)
	assert.Equal(t, "42", strings.TrimSpace(text))

	// Python errors, bad arguments and limits are tool errors the model can read.
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "y = 0\n1 / y"})
	assert.True(t, isErr)
	assert.Contains(t, text, "ZeroDivisionError")
	text, isErr = call(t, cs, "execute_python", map[string]any{"cod": "1"})
	assert.True(t, isErr)
	assert.Contains(t, text, "code")
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "y = -1\nwhile True:\n    pass"})
	assert.True(t, isErr)
	assert.Contains(t, text, "TimeoutError")
	text, _ = call(t, cs, "execute_python", map[string]any{"code": "double(y)"})
	assert.Equal(t, "42", strings.TrimSpace(text), "failed calls must leave the session as it was")

	// A named session is separate.
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "y", "session_id": "scratch"})
	assert.True(t, isErr)
	assert.Contains(t, text, "NameError")

	// The state is in the store: a new server process continues it.
	require.NoError(t, cs.Close())
	cs = mcpClient(t, "--store", dir)
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "print(double(y) + 1)"})
	assert.False(t, isErr, text)
	assert.Equal(t, "43", text)

	text, isErr = call(t, cs, "reset_session", map[string]any{})
	assert.False(t, isErr, text)
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "double"})
	assert.True(t, isErr)
	assert.Contains(t, text, "NameError")
}

func TestMCPUsageErrors(t *testing.T) {
	code, _, errOut := run(t, "mcp", "--max-memory", "lots")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--max-memory")
	code, _, _ = run(t, "mcp", "extra")
	assert.Equal(t, 2, code)
	code, _, errOut = run(t, "mcp", "--approvals", "model")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown approval policy "model": want user-first or user-only`)
}

// A malformed input line gets a JSON-RPC error and the server keeps
// serving: each shape is answered in turn, then a whole conversation runs
// on the same process.
func TestMCPMalformedInput(t *testing.T) {
	cmd := exec.Command(binary, "mcp", "--store", "mem:")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{}) // closed when the process has exited, with waitErr set
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	lines := make(chan []byte)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	send := func(line string) {
		t.Helper()
		_, err := io.WriteString(stdin, line+"\n")
		require.NoError(t, err)
	}
	type response struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	recv := func() response {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				<-exited
				t.Fatalf("monty mcp closed stdout (exit: %v); stderr:\n%s", waitErr, &stderr)
			}
			var r response
			require.NoError(t, json.Unmarshal(line, &r), "%s", line)
			return r
		case <-exited:
			t.Fatalf("monty mcp exited (%v); stderr:\n%s", waitErr, &stderr)
		case <-time.After(time.Minute):
			t.Fatal("no answer from monty mcp")
		}
		return response{}
	}

	for _, tc := range []struct {
		name string
		line string
		code int
		id   string
	}{
		{"not JSON", "junk", -32700, "null"},
		{"NUL bytes", "\x00\x00", -32700, "null"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "null"},
		{"empty object", `{}`, -32600, "null"},
		{"empty array", `[]`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "null"},
		{"scalar", `17`, -32600, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":2,"method":"ping"}`, -32600, "2"},
		{"id an object", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, "null"},
		{"id an array", `{"jsonrpc":"2.0","id":[3],"method":"ping"}`, -32600, "null"},
		{"method a number", `{"jsonrpc":"2.0","id":"m","method":4}`, -32600, `"m"`},
		{"params a string", `{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}`, -32600, "5"},
		{"deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), -32600, "null"},
		{"line over 16 MiB", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"p":"` + strings.Repeat("x", 16<<20) + `"}}`, -32600, "null"},
		{"initialize with bad params", `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2025}}`, -32602, "7"},
	} {
		send(tc.line)
		r := recv()
		require.NotNil(t, r.Error, tc.name)
		assert.Equal(t, tc.code, r.Error.Code, "%s: %s", tc.name, r.Error.Message)
		assert.JSONEq(t, tc.id, string(r.ID), tc.name)
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	r := recv()
	require.Nil(t, r.Error)
	assert.Equal(t, "1", string(r.ID))
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"x = 6\nx * 7"}}}`)
	r = recv()
	require.Nil(t, r.Error)
	assert.Equal(t, "2", string(r.ID))
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &res))
	require.Len(t, res.Content, 1)
	assert.False(t, res.IsError, res.Content[0].Text)
	assert.Equal(t, "42", strings.TrimSpace(res.Content[0].Text))

	// Still alive and serving; it ends cleanly when stdin closes.
	send(`junk`)
	assert.Equal(t, -32700, recv().Error.Code)
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	r = recv()
	assert.Equal(t, "3", string(r.ID))
	assert.Nil(t, r.Error)
	select {
	case <-exited:
		t.Fatalf("monty mcp exited: %v", waitErr)
	default:
	}
	require.NoError(t, stdin.Close())
	select {
	case <-exited:
		assert.NoError(t, waitErr, "stderr:\n%s", &stderr)
	case <-time.After(time.Minute):
		t.Fatal("monty mcp did not exit at the end of its input")
	}
	assert.Contains(t, stderr.String(), "rejected input line")
	assert.Less(t, stderr.Len(), 64<<10, "rejected lines are logged truncated")
}

// syncBuffer is a bytes.Buffer safe for a writing process and a reading
// test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestMCPAnswersBeforeCompiling: with nothing cached, monty mcp runs its
// first tool call on wazero's interpreter engine while the machine code
// compiles in the background.
func TestMCPAnswersBeforeCompiling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--store", "mem:")
	cmd.Env = append(os.Environ(), "MONTY_CACHE_DIR="+t.TempDir())
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "monty-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	text, isErr := call(t, cs, "execute_python", map[string]any{"code": "1 + 1"})
	require.False(t, isErr, text)
	assert.Equal(t, "2", text)
	log := stderr.String()
	assert.Contains(t, log, "event=fast_start")
	assert.NotContains(t, log, "event=switched", "the first call waited for the compilation")
}

// TestMCPTypeCheck: with --type-check, execute_python checks the code
// first and returns the diagnostics as the tool error; the type_check
// argument overrides the server's default per call.
func TestMCPTypeCheck(t *testing.T) {
	stubs := t.TempDir() + "/host.pyi"
	require.NoError(t, os.WriteFile(stubs, []byte("LIMIT: int\n"), 0o644))
	cs := mcpClient(t, "--store", t.TempDir(), "--type-check", "--stubs", stubs)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		if tool.Name == "execute_python" {
			schema, _ := tool.InputSchema.(map[string]any)
			assert.Contains(t, schema["properties"], "type_check")
		}
	}
	text, isErr := call(t, cs, "execute_python", map[string]any{"code": "def half(n: int) -> float:\n    return n / 2\nprint(half(LIMIT if False else 8))"})
	assert.False(t, isErr, text)
	assert.Equal(t, "4.0", text)
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "print('ran')\nhalf('8')"})
	assert.True(t, isErr)
	assert.Contains(t, text, "error[invalid-argument-type]")
	assert.Contains(t, text, "the code was not run")
	assert.NotContains(t, text, "ran\n")
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "half('8')", "type_check": false})
	assert.True(t, isErr)
	assert.Contains(t, text, "TypeError", "unchecked, it ran and failed at run time")
}

// TestMCPMount: `monty mcp --mount` puts the operator's directory in the
// sandbox at its guest path; an overlay keeps the tool's writes in memory.
func TestMCPMount(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/in.txt", []byte("from the host"), 0o644))
	cs := mcpClient(t, "--store", "mem:", "--mount", dir+":/data:overlay")
	// The tool's description tells the model the guest path, never the host's.
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var desc string
	for _, tool := range tools.Tools {
		if tool.Name == "execute_python" {
			desc = tool.Description
		}
	}
	assert.Contains(t, desc, "Mounted directories: /data")
	assert.NotContains(t, desc, dir)
	text, isErr := call(t, cs, "execute_python", map[string]any{"code": "from pathlib import Path\nPath('/data/in.txt').write_text('changed')\nprint(Path('/data/in.txt').read_text())"})
	assert.False(t, isErr, text)
	assert.Equal(t, "changed", strings.TrimSpace(text))
	text, isErr = call(t, cs, "execute_python", map[string]any{"code": "open('" + dir + "/in.txt').read()"})
	assert.True(t, isErr)
	assert.Contains(t, text, "PermissionError")
	b, err := os.ReadFile(dir + "/in.txt")
	require.NoError(t, err)
	assert.Equal(t, "from the host", string(b))
}

// TestMCPClientTools: over MCP the model is the client: execute_python with
// client_tools pauses at their calls and says how to answer; resume_python
// with the model's results continues the run, in a new server process too.
func TestMCPClientTools(t *testing.T) {
	dir := t.TempDir()
	cs := mcpClient(t, "--store", dir)
	text, isErr := call(t, cs, "execute_python", map[string]any{
		"code":         "import asyncio\nuser = lookup_user(42)\nrates = await asyncio.gather(rate('a'), rate('b'))\nprint(user, rates)",
		"client_tools": []map[string]any{{"name": "lookup_user"}, {"name": "rate", "async": true}},
	})
	require.False(t, isErr, text)
	assert.Contains(t, text, "The code is paused at calls you answer yourself")
	assert.Contains(t, text, "lookup_user(42)")
	runID := regexp.MustCompile(`run_id "([0-9a-f]+)"`).FindStringSubmatch(text)
	require.Len(t, runID, 2, text)

	// Another process resumes it (the paused run is in the store).
	require.NoError(t, cs.Close())
	cs = mcpClient(t, "--store", dir)
	text, isErr = call(t, cs, "resume_python", map[string]any{"run_id": runID[1], "results": []map[string]any{{"id": "0", "value": "ada"}}})
	require.False(t, isErr, text)
	assert.Contains(t, text, "rate('a')")
	assert.Contains(t, text, "rate('b')")
	next := regexp.MustCompile(`run_id "([0-9a-f]+)"`).FindStringSubmatch(text)
	require.Len(t, next, 2, text)
	ids := regexp.MustCompile(`id "(\d+)": rate`).FindAllStringSubmatch(text, -1)
	require.Len(t, ids, 2, text)
	text, isErr = call(t, cs, "resume_python", map[string]any{"run_id": next[1], "results": []map[string]any{
		{"id": ids[0][1], "value": 4.5}, {"id": ids[1][1], "value": 3}}})
	require.False(t, isErr, text)
	assert.Equal(t, "ada [4.5, 3]", strings.TrimSpace(text))

	// A resume the run cannot take is a tool error the model can read.
	text, isErr = call(t, cs, "resume_python", map[string]any{"run_id": next[1], "results": []map[string]any{{"id": "0", "value": 1}}})
	assert.True(t, isErr)
	assert.Contains(t, text, `agent: bad resume_python arguments: run_id "`+next[1]+`" is not paused in the conversation's session`)
}
