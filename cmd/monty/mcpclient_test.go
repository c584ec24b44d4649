package main_test

import (
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
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
