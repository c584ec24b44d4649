package main_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
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
}
