package servetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// mcpPaused is the part of a paused execute_python result the test reads.
type mcpPaused struct {
	RunID  string `json:"run_id"`
	Paused struct {
		Calls []struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Approval bool   `json:"approval"`
		} `json:"calls"`
	} `json:"paused"`
}

// mcpCall calls tool of the monty mcp behind cs and returns its text, its
// structured result and whether it is a tool error.
func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, []byte, bool) {
	t.Helper()
	text, res := mcptest.CallTool(t, cs, tool, args)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return text, raw, res.IsError
}

// consoleDecide is the Approve/Deny form of a paused approval call on the
// console's pages: its action, CSRF token and call id.
var consoleDecide = regexp.MustCompile(`<form method="post" action="(/ui/runs/[^"]+/decide)" class="inline">\s*<input type="hidden" name="csrf" value="([^"]+)">\s*<input type="hidden" name="call" value="([^"]+)">`)

// consoleGet fetches a page of the console with the browser client c.
func consoleGet(t *testing.T, c *http.Client, in *instance, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(in.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// consolePost submits a console form with the browser client c.
func consolePost(t *testing.T, c *http.Client, in *instance, path string, form url.Values) (int, http.Header, string) {
	t.Helper()
	resp, err := c.PostForm(in.url+path, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

// consoleBrowser is a console client signed in with key: a cookie jar,
// redirects not followed.
func consoleBrowser(t *testing.T, in *instance, key string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status, header, body := consolePost(t, c, in, "/ui/signin", url.Values{"key": {key}})
	require.Equal(t, http.StatusSeeOther, status, body)
	require.Equal(t, "/ui/", header.Get("Location"))
	return c
}

// TestMCPSessionsInAPINamespace: `monty mcp --api-key K` keeps its
// sessions as `monty serve` keeps K's. A client without elicitation gets
// durable pauses at an approval call (server-everything's echo); a monty
// serve on the same store with K decides one through POST
// /runs/{run_id}/resume and the other through its console's Approve
// form, and the approved calls are made there; the same monty mcp then
// continues both sessions with what the resumed runs set. Another key
// sees and decides none of them.
func TestMCPSessionsInAPINamespace(t *testing.T) {
	const key, otherKey = "mcpns-key-0123456789", "mcpns-other-key-0123"
	dir := t.TempDir()
	signingFile := filepath.Join(t.TempDir(), "signing")
	require.NoError(t, os.WriteFile(signingFile, []byte(signingKey+"\n"), 0o600))
	everything := "everything=" + strings.Join(mcptest.Everything(t), " ")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--store", dir, "--api-key", key, "--signing-key-file", signingFile,
		"--connect", everything, "--approve", "everything=echo", "--console-url", "http://ops.example/ui", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	// No elicitation handler: the client cannot ask its user.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpns-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()

	pause := func(args map[string]any, session string) mcpPaused {
		t.Helper()
		text, raw, isErr := mcpCall(t, cs, "execute_python", args)
		require.False(t, isErr, text)
		assert.Contains(t, text, `An operator can also decide them in the console: http://ops.example/ui (session "`+session+`")`)
		var p mcpPaused
		require.NoError(t, json.Unmarshal(raw, &p), string(raw))
		require.NotEmpty(t, p.RunID, text)
		require.Len(t, p.Paused.Calls, 1, text)
		assert.Equal(t, "everything.echo", p.Paused.Calls[0].Name)
		assert.True(t, p.Paused.Calls[0].Approval)
		return p
	}
	byAPI := pause(map[string]any{"code": "greeting = await everything.echo(message='by the API')\nprint(greeting)"}, "mcp")
	byConsole := pause(map[string]any{"code": "sided = await everything.echo(message='by the console')\nprint(sided)", "session_id": "side"}, "mcp.side")
	// The API's run id of a paused run of API session id: base64url(id).run.
	apiRunID := func(sessionID, run string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(sessionID)) + "." + run
	}

	in := serve(t, "--store", dir, "--api-key", key, "--api-key", otherKey, "--connect", everything, "--approve", "everything=echo")

	// Another key sees neither session and cannot resume their runs.
	for _, id := range []string{"mcp", "mcp.side"} {
		for k, exists := range map[string]bool{key: true, otherKey: false} {
			status, _, data, err := in.do("GET", "/state/"+id+"/info", nil, "x-api-key", k)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status, "%s: %s", id, data)
			var info struct {
				Exists bool `json:"exists"`
			}
			require.NoError(t, json.Unmarshal(data, &info))
			assert.Equal(t, exists, info.Exists, "%s with key %s: %s", id, k, data)
		}
	}
	approve := mustJSON(map[string]any{"results": []map[string]any{{"id": byAPI.Paused.Calls[0].ID, "approve": true}}})
	status, _, data, err := in.do("POST", "/runs/"+apiRunID("mcp", byAPI.RunID)+"/resume", approve, "x-api-key", otherKey)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, status, string(data))
	other := consoleBrowser(t, in, otherKey)
	_, page := consoleGet(t, other, in, "/ui/approvals")
	assert.Contains(t, page, "No approvals are waiting.")

	// The key's console lists both approvals, under the API's run ids.
	browser := consoleBrowser(t, in, key)
	status, page = consoleGet(t, browser, in, "/ui/approvals")
	require.Equal(t, http.StatusOK, status, page)
	assert.Contains(t, page, "2 calls waiting", page)
	forms := map[string][]string{}
	for _, f := range consoleDecide.FindAllStringSubmatch(page, -1) {
		forms[f[1]] = f
	}
	require.Contains(t, forms, "/ui/runs/"+apiRunID("mcp", byAPI.RunID)+"/decide", page)
	require.Contains(t, forms, "/ui/runs/"+apiRunID("mcp.side", byConsole.RunID)+"/decide", page)

	// POST /runs/{run_id}/resume approves the first: the call is made.
	status, _, data, err = in.do("POST", "/runs/"+apiRunID("mcp", byAPI.RunID)+"/resume", approve, "x-api-key", key)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, string(data))
	var done struct {
		Status string `json:"status"`
		Stdout string `json:"stdout"`
	}
	require.NoError(t, json.Unmarshal(data, &done))
	assert.Equal(t, "completed", done.Status, string(data))
	assert.Equal(t, "Echo: by the API\n", done.Stdout)

	// The console's Approve form approves the second.
	f := forms["/ui/runs/"+apiRunID("mcp.side", byConsole.RunID)+"/decide"]
	assert.Equal(t, byConsole.Paused.Calls[0].ID, f[3])
	status, _, page = consolePost(t, browser, in, f[1], url.Values{"csrf": {f[2]}, "call": {f[3]}, "decision": {"approve"}})
	require.Equal(t, http.StatusOK, status, page)
	assert.Contains(t, page, "Echo: by the console")
	_, page = consoleGet(t, browser, in, "/ui/approvals")
	assert.Contains(t, page, "No approvals are waiting.")

	// The same monty mcp continues both sessions from what the runs set.
	text, _, isErr := mcpCall(t, cs, "execute_python", map[string]any{"code": "greeting"})
	assert.False(t, isErr, text)
	assert.Equal(t, "'Echo: by the API'", text)
	text, _, isErr = mcpCall(t, cs, "execute_python", map[string]any{"code": "sided", "session_id": "side"})
	assert.False(t, isErr, text)
	assert.Equal(t, "'Echo: by the console'", text)
	// The runs were decided: resuming them again over MCP makes no call.
	text, _, isErr = mcpCall(t, cs, "resume_python", map[string]any{"run_id": byAPI.RunID, "results": []any{map[string]any{"id": byAPI.Paused.Calls[0].ID, "approve": true}}})
	assert.True(t, isErr, text)
	assert.Contains(t, text, "is not paused")

	// And the API sees what the MCP calls set, under the same key only.
	status, _, data, err = in.do("POST", "/exec", mustJSON(map[string]any{"code": "(greeting, len(greeting))", "session_id": "mcp"}), "x-api-key", key)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, string(data))
	var res execResult
	require.NoError(t, json.Unmarshal(data, &res))
	assert.JSONEq(t, `["Echo: by the API", 16]`, string(res.Result), string(data))
}
