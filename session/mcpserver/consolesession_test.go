package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/monty-go/monty/session/mcpserver"
)

// TestConsoleSession: a run paused at approvals names the console and,
// with Options.ConsoleSession, the session as the console shows it.
func TestConsoleSession(t *testing.T) {
	var got string
	cs := approvalClient(t, approvalExecutor(t, newRepoTools(), 0), mcpserver.Options{ConsoleURL: "https://ops.example/ui", ThreadKey: "desk",
		ConsoleSession: func(storeID string) string { got = storeID; return "api-" + storeID }}, "", nil)
	res, text := callTool(t, cs, "execute_python", map[string]any{"code": deleteCode, "session_id": "side"})
	assert.False(t, res.IsError, text)
	assert.Equal(t, "desk/side", got, "given the store id of the paused session")
	assert.Contains(t, text, `An operator can also decide them in the console: https://ops.example/ui (session "api-desk/side")`)
}
