package mcpserver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/monty-go/monty/session/mcpclient/mcptest"
	"github.com/monty-go/monty/session/mcpserver"
)

// pyTraceClient is a client of the official MCP Python SDK (mcp on PyPI,
// which puts the current OpenTelemetry context in each request's _meta,
// SEP-414) over streamable HTTP: under a span with the given trace and
// span ids (the OpenTelemetry API only, no SDK: a non-recording span
// carries them) it calls execute_python, then once more outside any span,
// and prints the texts of both results.
const pyTraceClient = `
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

URL, TRACE_ID, SPAN_ID = sys.argv[1], sys.argv[2], sys.argv[3]


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def main():
    async with streamable_http_client(URL) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            parent = NonRecordingSpan(SpanContext(int(TRACE_ID, 16), int(SPAN_ID, 16), is_remote=False,
                                                  trace_flags=TraceFlags(TraceFlags.SAMPLED)))
            with trace.use_span(parent):
                res = await s.call_tool("execute_python", {"code": "6 * 7"})
            print(text_of(res))
            res = await s.call_tool("execute_python", {"code": "1 / 0"})
            print(res.is_error)


anyio.run(main)
`

// TestTraceContextFromPythonClient: the official MCP Python SDK, as a
// client in a traced context, sends the W3C trace context in _meta, and
// the server's span joins that trace; its calls outside a trace start new
// ones. Needs MONTY_TEST_PYTHON (scripts/pyclients.sh).
func TestTraceContextFromPythonClient(t *testing.T) {
	py := mcptest.Python(t, "a client")
	exec0, exp := tracedExecutor(t)
	srv, err := mcpserver.New(mcpserver.Options{Executor: exec0})
	require.NoError(t, err)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	script := filepath.Join(t.TempDir(), "trace_client.py")
	require.NoError(t, os.WriteFile(script, []byte(pyTraceClient), 0o644))
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, hs.URL, traceID, parentID)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Equal(t, "42\nTrue", strings.TrimSpace(stdout.String()))

	var servers []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "tools/call execute_python" {
			servers = append(servers, s)
		}
	}
	require.Len(t, servers, 2)
	traced, untraced := servers[0], servers[1]
	assert.Equal(t, traceID, traced.SpanContext.TraceID().String())
	assert.Equal(t, parentID, traced.Parent.SpanID().String())
	assert.True(t, traced.Parent.IsRemote())
	assert.Equal(t, codes.Unset, traced.Status.Code)
	assert.False(t, untraced.Parent.IsValid(), "a call outside a trace starts one")
	assert.NotEqual(t, traceID, untraced.SpanContext.TraceID().String())
	assert.Equal(t, codes.Error, untraced.Status.Code)
	assert.Equal(t, "ZeroDivisionError", untraced.Status.Description)
}
