package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// shellQuote quotes s as one word for --connect's command line.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pidWrapped is the command line of argv run through sh, which writes
// its pid (argv's, after exec) to pidFile at every start.
func pidWrapped(argv []string, pidFile string) string {
	words := []string{"sh", "-c", shellQuote(`echo $$ >"$0"; exec "$@"`), shellQuote(pidFile)}
	for _, a := range argv {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// readPid waits for pidFile to hold a pid other than not, and returns it.
func readPid(t *testing.T, pidFile string, not int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != not {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds no new pid (%q)", pidFile, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestConnectMCP drives `monty mcp --connect` with the official Go SDK's
// client, over two real MCP servers nobody here wrote (the reference
// "everything" server and mcp-server-time), in one monty process:
//
//   - one execute_python gathers calls to both servers and computes on
//     their results (structured content as dicts, text as str);
//   - with type_check a call with a wrong argument name is refused before
//     anything runs, from the stubs of the tools' input schemas;
//   - a tool's isError result is a RuntimeError the code catches;
//   - the everything server killed in the middle of a call raises
//     OSError in the code, and the next call starts the server again;
//   - monty logs each connection with its tool count, and when monty
//     exits no server process is left.
func TestConnectMCP(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "everything.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--store", "mem:", "--timeout", "30s",
		"--connect", "everything="+pidWrapped(mcptest.Everything(t), pidFile),
		"--connect", "time="+strings.Join(mcptest.Time(t), " "),
		"--connect-deny", "time=convert_time")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "monty-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	first := readPid(t, pidFile, 0)

	execute := func(args map[string]any) (text string, result map[string]any, isError bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: args})
		require.NoError(t, err)
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &result))
		return text, result, res.IsError
	}

	text, _, isErr := execute(map[string]any{"code": `import asyncio
weather, now, echoed = await asyncio.gather(
    everything.get_structured_content(location='Chicago'),
    time.get_current_time(timezone='UTC'),
    everything.echo(message='hello'))
total = await everything.get_sum(a=2, b=3.5)
print(now['timezone'], sorted(weather), type(weather['temperature']).__name__, now['datetime'][:2], echoed, total)
print(len(list_functions('everything')) > 5, [f['name'] for f in list_functions('time')])`})
	require.False(t, isErr, text)
	assert.Contains(t, text, "\nUTC ['conditions', 'humidity', 'temperature'] int 20 Echo: hello The sum of 2 and 3.5 is 5.5.\n")
	assert.Contains(t, text, "\nTrue ['time.get_current_time']", "--connect-deny leaves convert_time out")

	text, result, isErr := execute(map[string]any{"type_check": true, "code": "print('ran')\nawait time.get_current_time(zone='UTC')"})
	assert.True(t, isErr)
	assert.Equal(t, "TypeCheckError", result["error_type"], text)
	assert.Contains(t, text, "Argument `zone` does not match any known parameter")
	assert.Empty(t, result["output"], "nothing ran")

	text, _, isErr = execute(map[string]any{"code": `for call in (lambda: time.get_current_time(timezone='Nowhere/X'), lambda: everything.simulate_research_query(topic='tea')):
    try:
        await call()
    except RuntimeError as e:
        print('caught', e)`})
	require.False(t, isErr, text)
	assert.Contains(t, text, "\ncaught time.get_current_time failed: Error executing tool get_current_time: Invalid timezone")
	assert.Contains(t, text, "\ncaught everything.simulate_research_query failed: ")

	// Killed mid-call: the call raises OSError; the next one starts the
	// server again.
	type answer struct {
		text  string
		isErr bool
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": `try:
    await everything.trigger_long_running_operation(duration=20, steps=20)
except OSError as e:
    print('caught', e)`}})
		if err != nil {
			done <- answer{err.Error(), true}
			return
		}
		done <- answer{res.Content[0].(*mcp.TextContent).Text, res.IsError}
	}()
	time.Sleep(time.Second) // the call is under way (it takes 20 s)
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	select {
	case a := <-done:
		require.False(t, a.isErr, a.text)
		assert.Contains(t, a.text, "\ncaught the MCP server everything went away during trigger-long-running-operation()")
	case <-time.After(15 * time.Second):
		t.Fatal("the call did not end when its server was killed")
	}
	text, _, isErr = execute(map[string]any{"code": "await everything.echo(message='back')"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "Echo: back")
	second := readPid(t, pidFile, first)

	logs := stderr.String()
	assert.Regexp(t, `msg="mcp server connected" server=everything command=sh tools=\d+`, logs)
	assert.Contains(t, logs, `msg="mcp server connected" server=time command=`+mcptest.Time(t)[0]+" tools=1")
	assert.Contains(t, logs, `msg="mcp server reconnected" server=everything`)

	// monty exits at the end of its input, stopping the servers.
	require.NoError(t, cs.Close(), "monty mcp did not exit within 5 s of the end of its input (the SDK then sent SIGTERM): its servers did not stop")
	for _, pid := range []int{first, second} {
		deadline := time.Now().Add(10 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		assert.False(t, alive(pid), "the everything server (pid %d) outlived monty", pid)
	}
}

// TestConnectHTTP connects monty -c to the everything server over
// streamable HTTP, through a proxy that records the requests' headers:
// every request carries the --connect-header headers.
func TestConnectHTTP(t *testing.T) {
	endpoint, err := url.Parse(mcptest.StartEverythingHTTP(t))
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []string
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: endpoint.Scheme, Host: endpoint.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Trace"))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	code, out, errOut := run(t, "--connect", "web="+front.URL+endpoint.Path,
		"--connect-header", "web=Authorization: Bearer s3cret", "--connect-header", "web=X-Trace:  t-1 ",
		"-c", "print(await web.echo(message='over http'))")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "Echo: over http\n", out)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, s := range seen {
		assert.Regexp(t, `^[A-Z]+ Bearer s3cret t-1$`, s)
	}
}

// TestConnectRun: monty -c awaits a connected server's tool at top
// level; with --type-check a wrong argument is refused before anything
// runs (the stubs come from the tool's input schema).
func TestConnectRun(t *testing.T) {
	connect := "time=" + strings.Join(mcptest.Time(t), " ")
	code, out, errOut := run(t, "--connect", connect, "-c", `print((await time.get_current_time(timezone="UTC"))["timezone"])`)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "UTC\n", out)
	assert.Empty(t, errOut, "a script's stderr is its own: connections are told on a terminal only")

	code, out, errOut = run(t, "--connect", connect, "--type-check", "-c", "print('ran')\nawait time.get_current_time(tz='UTC')")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "tz")
	assert.Contains(t, errOut, "nothing was run")
}

// TestConnectFailures: a server that is not there, exits at once or never
// answers fails monty with a message naming it, without hanging, and
// leaves no process behind.
func TestConnectFailures(t *testing.T) {
	code, _, errOut := run(t, "--connect", "x=no-such-mcp-server --stdio", "-c", "1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `monty: --connect x: exec: "no-such-mcp-server": executable file not found`)

	code, _, errOut = run(t, "mcp", "--connect", `x=sh -c 'echo "no config file" >&2; exit 3'`)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "monty mcp: --connect x: cannot connect")
	assert.Contains(t, errOut, "its stderr ended with:\nno config file")

	pidFile := filepath.Join(t.TempDir(), "sleep.pid")
	start := time.Now()
	code, _, errOut = run(t, "--connect", "x="+pidWrapped([]string{"sleep", "60"}, pidFile), "--connect-timeout", "500ms", "-c", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "monty: --connect x: no answer within 500ms (--connect-timeout): is sh (on stdio) an MCP server?")
	assert.Less(t, time.Since(start), 10*time.Second)
	pid := readPid(t, pidFile, 0)
	assert.False(t, alive(pid), "the server that did not answer (pid %d) was left running", pid)
}

// TestConnectApproval: with --approve a tool's call waits for a person:
// the run pauses and is stored, a second monty mcp process over the same
// store resumes it with approve, and only then is the call made.
func TestConnectApproval(t *testing.T) {
	dir := t.TempDir()
	everything := strings.Join(mcptest.Everything(t), " ")
	args := []string{"--store", dir, "--connect", "everything=" + everything, "--approve", "everything=echo,get-sum"}
	ctx := context.Background()
	cs := mcpClient(t, args...)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": `r = await everything.echo(message="approved")
try:
    await everything.get_sum(a=1, b=2)
except PermissionError as e:
    r += " / " + str(e)
print(r)`}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	var paused struct {
		RunID  string `json:"run_id"`
		Paused struct {
			Calls []struct {
				ID       string `json:"id"`
				Name     string `json:"name"`
				Approval bool   `json:"approval"`
			} `json:"calls"`
		} `json:"paused"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &paused), string(raw))
	require.Len(t, paused.Paused.Calls, 1, string(raw))
	call := paused.Paused.Calls[0]
	assert.Equal(t, "everything.echo", call.Name)
	assert.True(t, call.Approval)
	require.NoError(t, cs.Close())

	// Another process approves the first call and refuses the second.
	cs = mcpClient(t, args...)
	answer := func(runID, id string, approve bool) (string, string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "resume_python", Arguments: map[string]any{
			"run_id": runID, "results": []map[string]any{{"id": id, "approve": approve}}}})
		require.NoError(t, err)
		require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
		var next struct {
			RunID  string `json:"run_id"`
			Output string `json:"output"`
			Paused struct {
				Calls []struct{ ID string } `json:"calls"`
			} `json:"paused"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		require.NoError(t, json.Unmarshal(raw, &next))
		if next.RunID != "" {
			return next.RunID, next.Paused.Calls[0].ID
		}
		return "", next.Output
	}
	runID, id := answer(paused.RunID, call.ID, true)
	require.NotEmpty(t, runID, "the refused call pauses again first")
	_, out := answer(runID, id, false)
	assert.Equal(t, "Echo: approved / everything.get_sum was not approved: a person refused the call\n", out)
}
