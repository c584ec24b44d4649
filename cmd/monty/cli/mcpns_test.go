package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/storeurl"
)

const nsSigningKey = "mcp-namespace-signing-key-0123"

// writeFile writes text to a new file of the test and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// callToolArgs calls execute_python with args and returns the result's
// text and whether it is a tool error.
func callToolArgs(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	text, res := mcptest.CallTool(t, cs, "execute_python", args)
	return text, res.IsError
}

// TestMCPAPIKeyRefused: monty mcp --api-key refuses to start (exit 2,
// saying what to change) without a signing key, with a key file that does
// not hold exactly one key, and with a thread that is no API session id.
func TestMCPAPIKeyRefused(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "")
	t.Setenv("MONTY_API_KEYS", "env-key-0123456789")
	signing := writeFile(t, "signing", nsSigningKey+"\n")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--api-key", "mcp-key-0123456789"}, "--api-key needs the signing key monty serve uses"},
		{[]string{"--api-key-file", writeFile(t, "keys", "mcp-key-0123456789\n")}, "--api-key needs the signing key monty serve uses"},
		{[]string{"--api-key", "mcp-key-0123456789", "--signing-key-file", writeFile(t, "short", "short")}, "a signing key of at least 16 bytes is required"},
		{[]string{"--api-key", "short", "--signing-key-file", signing}, `--api-key: API key "sh"... is shorter than 8 characters`},
		{[]string{"--api-key", "mcp-key-0123456789", "--api-key-file", writeFile(t, "keys", "mcp-key-0123456789\n"), "--signing-key-file", signing}, "give --api-key or --api-key-file, not both"},
		{[]string{"--api-key-file", writeFile(t, "two", "# two keys\nmcp-key-0123456789\nmcp-key-other-4567\n"), "--signing-key-file", signing}, "holds 2 keys: monty mcp keeps its sessions in one key's namespace"},
		{[]string{"--api-key-file", writeFile(t, "none", "# no key\n\n"), "--signing-key-file", signing}, "holds 0 keys"},
		{[]string{"--api-key-file", filepath.Join(t.TempDir(), "missing"), "--signing-key-file", signing}, "--api-key-file: API keys: open "},
		{[]string{"--api-key", "mcp-key-0123456789", "--signing-key-file", signing, "--thread", "a.b"}, `--thread "a.b": with --api-key the thread's session is an API session`},
		{[]string{"--api-key", "mcp-key-0123456789", "--signing-key-file", signing, "--thread", "a:b"}, `--thread "a:b"`},
	} {
		code, out, errOut := monty(t, append([]string{"mcp", "--store", "mem:"}, c.args...)...)
		assert.Equal(t, cli.ExitUsage, code, "%q: %s", c.args, errOut)
		assert.Empty(t, out)
		assert.True(t, strings.HasPrefix(errOut, "monty mcp: "), errOut)
		assert.Contains(t, errOut, c.says, c.args)
	}
}

// TestMCPAPIKeyLayout: with --api-key-file, monty mcp keeps the thread's
// session as the API session named by the thread, and a named session S
// as <thread>.S, in the key's namespace and signed with the API's key of
// each session; a session_id that makes no API session id is a tool error.
func TestMCPAPIKeyLayout(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", nsSigningKey)
	dir := t.TempDir()
	const key = "mcp-key-0123456789"
	cs := mcpSession(t, "--store", dir, "--thread", "desk", "--api-key-file", writeFile(t, "keys", "# the key\n"+key+"\n"))
	text, isErr := callTool(t, cs, "x = 'thread'")
	require.False(t, isErr, text)
	text, isErr = callToolArgs(t, cs, map[string]any{"code": "y = 'named'", "session_id": "side.1"})
	require.False(t, isErr, text)
	text, isErr = callToolArgs(t, cs, map[string]any{"code": "1", "session_id": "a:b"})
	assert.True(t, isErr)
	assert.Contains(t, text, `session_id "a:b": in an API namespace use letters, digits, '_', '-' or '.'`)

	ctx := context.Background()
	st, err := storeurl.Open(ctx, dir)
	require.NoError(t, err)
	defer st.Close()
	ns := apikey.NamespaceOf(key)
	for _, id := range []string{"desk", "desk.side.1"} {
		obj, err := st.Get(ctx, ns+"/"+id)
		require.NoError(t, err, id)
		_, err = session.Inspect(obj.Data, apikey.StateKey([]byte(nsSigningKey), ns, id))
		assert.NoError(t, err, "%s is signed with the API's key of the session", id)
		_, err = session.Inspect(obj.Data, []byte(nsSigningKey))
		assert.Error(t, err, "%s is not signed with the plain signing key", id)
	}
	for _, old := range []string{"desk", "desk/side.1"} {
		_, err := st.Get(ctx, old)
		assert.ErrorIs(t, err, store.ErrNotFound, "nothing in monty mcp's own layout: %s", old)
	}
}
