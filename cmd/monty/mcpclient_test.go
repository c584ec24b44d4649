package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// TestMCPThroughPythonSDK drives `monty mcp` with the official MCP Python
// SDK (testdata/clients/mcp_stdio.py): a paused run's ids are the ones
// resume_python takes, the tools' outputSchema validates every result,
// resume_python's errors name it and the caller's ids, and a one-shot
// client that closes stdin at once gets every answer.
func TestMCPThroughPythonSDK(t *testing.T) {
	out := clienttest.Run(t, 3*time.Minute, nil, "mcp_stdio.py", binary, t.TempDir())
	if out != "ok\n" {
		t.Fatalf("mcp_stdio.py printed %q", out)
	}
}

// TestMCPApprovalAskedOfUser drives `monty mcp --connect everything=…
// --approve everything=echo` with the official MCP Python SDK over stdio,
// its elicitation_callback being the user (testdata/clients/mcp_elicit.py):
// the user approves (the reference server's real echo runs) or declines
// (PermissionError), and a run the user did not answer in time cannot be
// approved through resume_python, only by asking the user again.
func TestMCPApprovalAskedOfUser(t *testing.T) {
	everything := strings.Join(mcptest.Everything(t), " ")
	out := clienttest.Run(t, 3*time.Minute, nil, "mcp_elicit.py", binary, t.TempDir(), everything)
	if out != "ok\n" {
		t.Fatalf("mcp_elicit.py printed %q", out)
	}
}
