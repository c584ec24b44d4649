package mcpclient_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
	"github.com/monty-go/monty/session/tools"
)

// The cost of code mode (MCP servers as namespaces, docs/agent.md) against
// the reference "everything" server from npm, started as a process like
// TestMCPReferenceServers does: set the server's command line with
// `eval "$(scripts/mcpservers.sh env)"` first (these benchmarks fail,
// saying so, when it is unset). Each benchmark compares two
// sub-benchmarks; read their ratio, not the absolute times (the server is
// a node process). -count runs each sub-benchmark's rounds back to back,
// so on a shared machine interleave them by running the test binary again
// and again:
//
//	go test -c -o /tmp/agent.test ./session/agent/
//	for i in $(seq 10); do /tmp/agent.test -test.run xxx -test.bench BenchmarkMCP; done >mcp.txt
//	go run golang.org/x/perf/cmd/benchstat@latest mcp.txt

// BenchmarkMCPCall: one MCP tool call (the server's echo) made directly by
// the Go SDK's client (direct) against the same call made from Python in a
// warm execute_python session (python). The Python calls are made in a
// loop of up to callsPerRun per Execute, so the figure is the cost per
// tool call, with the execute_python call's own cost (running a snippet,
// storing the session) spread over the loop. Both report ns/toolcall (the same as
// ns/op: an op is one tool call).
func BenchmarkMCPCall(b *testing.B) {
	ctx := context.Background()
	cs, e := directMCPSession(b), mcpBenchExecutor(b)
	b.Run("direct", func(b *testing.B) {
		params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}
		for range warmCalls {
			res, err := cs.CallTool(ctx, params)
			require.NoError(b, err)
			require.Equal(b, "Echo: x", res.Content[0].(*mcp.TextContent).Text)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := cs.CallTool(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
		reportPerCall(b, 1)
	})
	b.Run("python", func(b *testing.B) {
		const loop = "for _ in range(%d):\n    r = await everything.echo(message=\"x\")\nr"
		require.Equal(b, "'Echo: x'", agenttest.OK(b, e, "bench", fmt.Sprintf(loop, warmCalls)))
		b.ResetTimer()
		for left := b.N; left > 0; left -= callsPerRun {
			res, err := e.Execute(ctx, "bench", agenttest.CodeArgs(fmt.Sprintf(loop, min(left, callsPerRun))))
			mustRun(b, res, err)
		}
		reportPerCall(b, 1)
	})
}

// BenchmarkMCPSnippetVsRoundTrips: ten tool calls (the server's get-sum)
// whose results are added up, as one execute_python call that gathers them
// (snippet: one model round trip) against ten execute_python calls of one
// tool call each, as a model without code mode makes them, one after
// another (round_trips: ten model round trips, the model adding up). An op
// is the ten calls. The round_trips metric is the number of model turns an
// op costs: each is an LLM call, seconds of latency and the tokens of the
// conversation so far, which these wall times, only the local part, do not
// include.
func BenchmarkMCPSnippetVsRoundTrips(b *testing.B) {
	ctx := context.Background()
	e := mcpBenchExecutor(b)
	b.Run("snippet", func(b *testing.B) {
		const code = `import asyncio
sums = await asyncio.gather(*[everything.get_sum(a=i, b=0.5) for i in range(10)])
total = sum(float(s.rsplit(" ", 1)[1].rstrip(".")) for s in sums)
total`
		require.Equal(b, "50.0", agenttest.OK(b, e, "bench", code))
		args := agenttest.CodeArgs(code)
		b.ResetTimer()
		for range b.N {
			res, err := e.Execute(ctx, "bench", args)
			mustRun(b, res, err)
		}
		reportPerCall(b, 10)
		b.ReportMetric(1, "round_trips/op")
	})
	b.Run("round_trips", func(b *testing.B) {
		var args [10][]byte
		for i := range args {
			args[i] = agenttest.CodeArgs(fmt.Sprintf("await everything.get_sum(a=%d, b=0.5)", i))
		}
		require.Equal(b, "'The sum of 9 and 0.5 is 9.5.'", agenttest.OK(b, e, "bench", "await everything.get_sum(a=9, b=0.5)"))
		b.ResetTimer()
		for range b.N {
			for _, a := range args {
				res, err := e.Execute(ctx, "bench", a)
				mustRun(b, res, err)
			}
		}
		reportPerCall(b, 10)
		b.ReportMetric(10, "round_trips/op")
	})
}

// mustRun stops the benchmark when an execute_python call failed.
func mustRun(b *testing.B, res *agent.Result, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	if res.Err != nil {
		b.Fatal(res.Text)
	}
}

// callsPerRun bounds the tool calls of one execute_python call in
// BenchmarkMCPCall/python: its own cost, a few milliseconds, is then a few
// microseconds a call.
const callsPerRun = 1000

// warmCalls are made before timing, so that the server's JavaScript is
// compiled.
const warmCalls = 50

// reportPerCall reports the wall time per tool call, an op making calls of
// them.
func reportPerCall(b *testing.B, calls int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/toolcall")
}

// mcpBenchExecutor is an executor whose registry has a new everything
// server as the namespace everything, with no bound on host calls per run or on its time.
func mcpBenchExecutor(b *testing.B) *agent.Executor {
	b.Helper()
	reg, err := tools.NewRegistry()
	require.NoError(b, err)
	var cmd *exec.Cmd
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "everything", Transport: func() (mcp.Transport, error) {
		argv := mcptest.Everything(b)
		cmd = exec.Command(argv[0], argv[1:]...)
		return &mcp.CommandTransport{Command: cmd}, nil
	}})
	require.NoError(b, err)
	b.Cleanup(func() { stopServer(cmd, ns.Close) })
	return agenttest.NewExecutor(b, agent.ExecutorOptions{Functions: reg, Session: session.Options{Limits: runtime.Limits{MaxHostCalls: runtime.Unlimited, MaxDuration: runtime.Unlimited}}})
}

// directMCPSession is a Go SDK client session to a new everything server
// process, opened as Namespace opens its own.
func directMCPSession(b *testing.B) *mcp.ClientSession {
	b.Helper()
	argv := mcptest.Everything(b)
	cmd := exec.Command(argv[0], argv[1:]...)
	client := mcp.NewClient(&mcp.Implementation{Name: "monty-go-bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(b, err, strings.Join(argv, " "))
	b.Cleanup(func() { stopServer(cmd, cs.Close) })
	return cs
}

// stopServer kills the server's process, then closes its session: once
// connected, the everything server does not exit when its stdin closes,
// and the SDK would wait 5 s before it sends SIGTERM.
func stopServer(cmd *exec.Cmd, close func() error) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
	_ = close()
}
