//go:build !monty_lean

package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// TestConnectNotices: monty -c says which MCP servers it connected to on
// a terminal only, and shows the servers' warnings with their names.
func TestConnectNotices(t *testing.T) {
	emit := func(terminal bool, level slog.Level, msg string, attrs ...any) string {
		var buf bytes.Buffer
		slog.New(&noticeHandler{w: &buf, terminal: terminal}).Log(context.Background(), level, msg, attrs...)
		return buf.String()
	}
	connected := []any{"server", "time", "command", "uvx", "tools", 2}
	assert.Equal(t, "monty: connected to the MCP server time (2 tools)\n", emit(true, slog.LevelInfo, mcpConnected, connected...))
	assert.Empty(t, emit(false, slog.LevelInfo, mcpConnected, connected...))
	assert.Empty(t, emit(true, slog.LevelInfo, "mcp server stderr", "server", "time", "line", "starting"))
	assert.Equal(t, "monty: warning: mcp server went away [MCP server time]\n", emit(false, slog.LevelWarn, "mcp server went away", "server", "time"))
}

// TestServerStderr: a stdio server's stderr is logged line by line (a
// line too long cut), and its last lines, with a line not yet ended, are
// kept for the error when the server does not start.
func TestServerStderr(t *testing.T) {
	var logs bytes.Buffer
	w := &serverStderr{server: "x", log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))}
	for _, s := range []string{"one\r\ntw", "o\n", strings.Repeat("z", 3000), "\n"} {
		_, _ = w.Write([]byte(s))
	}
	for i := range stderrLines {
		_, _ = w.Write([]byte{byte('a' + i), '\n'})
	}
	_, _ = w.Write([]byte("unfinished"))
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	assert.Equal(t, `level=INFO msg="mcp server stderr" server=x line=one`, lines[0])
	assert.Equal(t, `level=INFO msg="mcp server stderr" server=x line=two`, lines[1])
	assert.Contains(t, lines[2], "line="+strings.Repeat("z", stderrLineSize)+"…")
	assert.Len(t, lines, 4+stderrLines, "the long line is logged once, and its end on its own")
	assert.Equal(t, "a\nb\nc\nd\ne\nf\ng\nh\nunfinished", w.tail())
}

// TestServeApproveToolNames: monty serve --approve with the tool's Python
// name pauses a /exec's call for a person's approval, as with its MCP
// name; resumed with approve, the call is made.
func TestServeApproveToolNames(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "serve-approve-signing-key-0123")
	for i, name := range []string{"get_sum", "get-sum"} {
		addr, _ := startServe(t, "--store", "mem:", "--connect", "ev="+strings.Join(mcptest.Everything(t), " "), "--approve", "ev="+name)
		base := "http://" + addr
		status, out := call(t, "POST", base+"/exec", fmt.Sprintf(`{"session_id": "s%d", "code": "await ev.get_sum(a=1, b=2)"}`, i))
		require.Equal(t, 200, status, "%v", out)
		require.Equal(t, "paused", out["status"], "--approve ev=%s: %v", name, out)
		calls, _ := out["calls"].([]any)
		require.Len(t, calls, 1, "%v", out)
		c := calls[0].(map[string]any)
		assert.Equal(t, true, c["approval"], "%v", c)
		status, out = call(t, "POST", base+"/runs/"+fmt.Sprint(out["run_id"])+"/resume", fmt.Sprintf(`{"results": [{"id": %q, "approve": true}]}`, c["id"]))
		require.Equal(t, 200, status, "%v", out)
		assert.Equal(t, "The sum of 1 and 2 is 3.", out["result"], "%v", out)
	}
}

// TestShownName: a flag's tool name in an error stays on one line and
// short, whatever it holds.
func TestShownName(t *testing.T) {
	for name, want := range map[string]string{
		"get_sum":               "get_sum",
		"get-sum":               "get-sum",
		"a b":                   `"a b"`,
		"line\nbreak":           `"line\nbreak"`,
		`say "hi"`:              `"say \"hi\""`,
		"\x1b[31mred":           `"\x1b[31mred"`,
		strings.Repeat("é", 81): `"` + strings.Repeat("é", 80) + `"…`,
	} {
		assert.Equal(t, want, shownName(name), "%q", name)
	}
}
