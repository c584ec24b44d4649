package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/telemetry/otlpenv/otlptest"
)

// clearOTelEnv unsets the OTEL_* variables the tests rely on not being set
// by the environment the tests run in, then sets pairs.
func clearOTelEnv(t *testing.T, pairs ...string) {
	t.Helper()
	for _, v := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_COMPRESSION",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	} {
		t.Setenv(v, "")
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		t.Setenv(pairs[i], pairs[i+1])
	}
}

// receiver starts an OTLP receiver over protocol and points the OTEL_*
// variables at it.
func receiver(t *testing.T, protocol string) *otlptest.Receiver {
	t.Helper()
	if protocol == "grpc" {
		r := otlptest.NewGRPC(t)
		clearOTelEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_INSECURE", "true")
		return r
	}
	r := otlptest.NewHTTP(t)
	clearOTelEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint, "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	return r
}

// checkExecutionSpan: the receiver got a monty.execute span of service
// monty and the metric of its duration.
func checkExecutionSpan(t *testing.T, r *otlptest.Receiver) otlptest.Span {
	t.Helper()
	span, ok := r.Span(telemetry.SpanExecute)
	if !ok {
		t.Fatalf("no %s span exported; got %v", telemetry.SpanExecute, r.SpanNames())
	}
	if span.Service != "monty" || span.Attributes[string(telemetry.AttrOutcome)] != telemetry.OutcomeOK {
		t.Errorf("%s span %+v: want service.name monty, outcome ok", telemetry.SpanExecute, span)
	}
	if m, ok := r.Metric("monty.execution.duration"); !ok || m.Service != "monty" {
		t.Errorf("metric monty.execution.duration: %+v %v; got %v", m, ok, r.Metrics())
	}
	return span
}

// TestServeTelemetry runs `monty serve` with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a receiver, over OTLP/HTTP (gzip) and OTLP/gRPC: after one
// POST /exec and the server's exit, the receiver has the execution's span,
// in the trace of the HTTP server span, and its metrics.
func TestServeTelemetry(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			r := receiver(t, protocol)
			t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			logs, logw := io.Pipe()
			done := make(chan int, 1)
			go func() {
				done <- cli.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", "mem:", "--log-format", "json"}, nil, io.Discard, logw)
				logw.Close()
			}()
			var addr, traces string
			sc := bufio.NewScanner(logs)
			for addr == "" && sc.Scan() {
				var rec struct {
					Msg    string `json:"msg"`
					Addr   string `json:"addr"`
					Traces string `json:"traces"`
				}
				if json.Unmarshal(sc.Bytes(), &rec) == nil {
					switch rec.Msg {
					case "listening":
						addr = rec.Addr
					case "OpenTelemetry export enabled":
						traces = rec.Traces
					}
				}
			}
			if addr == "" {
				t.Fatalf("the server did not start: exit %d", <-done)
			}
			go io.Copy(io.Discard, logs)
			if !strings.Contains(traces, protocol) || !strings.Contains(traces, strings.TrimPrefix(r.Endpoint, "http://")) {
				t.Errorf("logged traces %q; want %s to %s", traces, protocol, r.Endpoint)
			}
			resp, err := http.Post("http://"+addr+"/exec", "application/json", strings.NewReader(`{"code": "1+1"}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result":2`) {
				t.Fatalf("POST /exec: %d %s", resp.StatusCode, body)
			}
			cancel()
			if code := <-done; code != cli.ExitOK {
				t.Fatalf("serve exit %d", code)
			}
			exec := checkExecutionSpan(t, r)
			var server bool
			for _, s := range r.Spans() {
				server = server || (s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.TraceID == exec.TraceID && s.Service == "monty")
			}
			if !server {
				t.Errorf("no HTTP server span in the trace of %s; got %+v", telemetry.SpanExecute, r.Spans())
			}
		})
	}
}

// TestMCPTelemetry runs `monty mcp` with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a receiver: after one execute_python call and the end of
// input, the receiver has the execution's span and metrics.
func TestMCPTelemetry(t *testing.T) {
	r := receiver(t, "http/protobuf")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := cli.Run(context.Background(), []string{"mcp", "--store", "mem:"}, inR, outW, &stderr)
		outW.Close()
		done <- code
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "telemetry-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "1+1"}})
	if err != nil || res.IsError {
		t.Fatalf("execute_python: %v %+v", err, res)
	}
	inW.Close() // the end of input ends the server
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("monty mcp: exit %d: %s", code, stderr.String())
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "OpenTelemetry export enabled") {
		t.Errorf("no log line about telemetry: %s", stderr.String())
	}
	checkExecutionSpan(t, r)
}

// TestTelemetryConfigErrors: a bad OTEL_* setting stops serve and mcp at
// start (exit 2) with a message naming the variable.
func TestTelemetryConfigErrors(t *testing.T) {
	t.Setenv("MONTY_SIGNING_KEY", "0123456789abcdef")
	// Cancelled: a command that wrongly starts stops at once instead of
	// serving until the test times out.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_TRACES_EXPORTER", "console"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, "http/json"},
	} {
		clearOTelEnv(t, tc.env...)
		for _, args := range [][]string{{"serve", "--store", "mem:", "--addr", "127.0.0.1:0"}, {"mcp", "--store", "mem:"}} {
			var errOut bytes.Buffer
			code := cli.Run(ctx, args, strings.NewReader(""), io.Discard, &errOut)
			if code != cli.ExitUsage || !strings.Contains(errOut.String(), "OpenTelemetry") || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("%s with %v: exit %d, stderr %q; want exit %d naming %s", args[0], tc.env, code, errOut.String(), cli.ExitUsage, tc.want)
			}
		}
	}
}
