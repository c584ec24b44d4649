package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
