package otlpenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/telemetry/otlpenv"
	"github.com/monty-go/monty/session/telemetry/otlpenv/otlptest"
)

// otelVars are the variables Setup or the exporters read; cleared for
// each test so that the environment of the test run does not leak in.
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_COMPRESSION",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
}

func clearEnv(t *testing.T, set ...string) {
	t.Helper()
	for _, v := range otelVars {
		t.Setenv(v, "")
	}
	for i := 0; i+1 < len(set); i += 2 {
		t.Setenv(set[i], set[i+1])
	}
}

// setup runs Setup and stops the providers at the end of the test,
// without waiting for exports (there is often no receiver).
func setup(t *testing.T) (*otlpenv.Providers, error) {
	t.Helper()
	p, err := otlpenv.Setup(context.Background(), "monty-test")
	if p != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = p.Shutdown(ctx)
		})
	}
	return p, err
}

// TestSetupSelection: which signals are exported, over which protocol,
// for each rule of the package doc.
func TestSetupSelection(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	for _, tc := range []struct {
		name             string
		env              []string
		traces, metrics  string // protocol, "" off
		tracesEndpoint   string
		metricsEndpoint  string
		telemetryPresent bool
	}{
		{name: "nothing set", env: nil},
		{name: "disabled", env: []string{"OTEL_SDK_DISABLED", "true", "OTEL_EXPORTER_OTLP_ENDPOINT", ep, "OTEL_TRACES_EXPORTER", "otlp"}},
		{name: "disabled, any case", env: []string{"OTEL_SDK_DISABLED", "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT", ep}},
		{name: "an endpoint implies otlp", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", ep},
			traces: "http/protobuf", metrics: "http/protobuf", tracesEndpoint: ep + "/v1/traces", metricsEndpoint: ep + "/v1/metrics"},
		{name: "a traces endpoint implies otlp for traces only", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ep + "/t"},
			traces: "http/protobuf", tracesEndpoint: ep + "/t"},
		{name: "a metrics endpoint implies otlp for metrics only", env: []string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", ep + "/m"},
			metrics: "http/protobuf", metricsEndpoint: ep + "/m"},
		{name: "none turns a signal off", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", ep, "OTEL_METRICS_EXPORTER", "none"},
			traces: "http/protobuf", tracesEndpoint: ep + "/v1/traces"},
		{name: "otlp without an endpoint", env: []string{"OTEL_TRACES_EXPORTER", "otlp"},
			traces: "http/protobuf", tracesEndpoint: "localhost:4318"},
		{name: "grpc", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", ep, "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
			traces: "grpc", metrics: "grpc", tracesEndpoint: ep, metricsEndpoint: ep},
		{name: "a signal's protocol wins", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", ep, "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"},
			traces: "grpc", metrics: "http/protobuf", tracesEndpoint: ep, metricsEndpoint: ep + "/v1/metrics"},
		{name: "secrets are not shown", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://user:pw@collector:4318/v1/traces?token=x"},
			traces: "http/protobuf", tracesEndpoint: "https://collector:4318/v1/traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t, tc.env...)
			p, err := setup(t)
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			if p.Traces.Protocol != tc.traces || p.Metrics.Protocol != tc.metrics {
				t.Errorf("traces %q, metrics %q; want %q, %q", p.Traces.Protocol, p.Metrics.Protocol, tc.traces, tc.metrics)
			}
			if p.Traces.Endpoint != tc.tracesEndpoint || p.Metrics.Endpoint != tc.metricsEndpoint {
				t.Errorf("endpoints %q, %q; want %q, %q", p.Traces.Endpoint, p.Metrics.Endpoint, tc.tracesEndpoint, tc.metricsEndpoint)
			}
			on := tc.traces != "" || tc.metrics != ""
			if p.Enabled() != on || (p.Telemetry != nil) != on {
				t.Errorf("Enabled %v, Telemetry %v; want enabled %v", p.Enabled(), p.Telemetry, on)
			}
			if !on {
				if err := p.Shutdown(context.Background()); err != nil {
					t.Errorf("Shutdown with nothing on: %v", err)
				}
			}
		})
	}
	var none *otlpenv.Providers
	if none.Enabled() || none.Shutdown(context.Background()) != nil {
		t.Error("a nil *Providers is not an empty one")
	}
}

// TestSetupErrors: a configuration Setup cannot follow fails, naming the
// variable and what it accepts.
func TestSetupErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		{[]string{"OTEL_TRACES_EXPORTER", "console"}, []string{"OTEL_TRACES_EXPORTER", `"console"`, "otlp", "none"}},
		{[]string{"OTEL_METRICS_EXPORTER", "prometheus"}, []string{"OTEL_METRICS_EXPORTER", "otlp", "none"}},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "not implement", "http/protobuf or grpc"}},
		{[]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://x", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"}, []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL", "udp"}, []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "udp", "http/protobuf or grpc"}},
		{[]string{"OTEL_SDK_DISABLED", "yes"}, []string{"OTEL_SDK_DISABLED", "true or false"}},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_RESOURCE_ATTRIBUTES", "no-equals-sign"}, []string{"OTEL_RESOURCE_ATTRIBUTES"}},
	} {
		clearEnv(t, tc.env...)
		p, err := setup(t)
		if err == nil {
			t.Errorf("%v: no error (%+v)", tc.env, p)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", tc.env, err, w)
			}
		}
	}
}

// TestSetupExports sends a span and a metric through the providers to a
// receiver, over HTTP (gzip-compressed, too) and gRPC, and checks the
// resource: service.name from Setup unless OTEL_SERVICE_NAME says
// otherwise, the SDK's attributes, OTEL_RESOURCE_ATTRIBUTES. The globals
// follow the providers.
func TestSetupExports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grpc    bool
		env     []string
		service string
	}{
		{name: "http", service: "monty-test"},
		{name: "http gzip", env: []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", "OTEL_SERVICE_NAME", "from-env"}, service: "from-env"},
		{name: "grpc", grpc: true, env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_INSECURE", "true",
			"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment.name=test"}, service: "from-attrs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *otlptest.Receiver
			if tc.grpc {
				r = otlptest.NewGRPC(t)
			} else {
				r = otlptest.NewHTTP(t)
			}
			clearEnv(t, append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint}, tc.env...)...)
			p, err := setup(t)
			if err != nil {
				t.Fatal(err)
			}
			if otel.GetTracerProvider() != p.Telemetry.TracerProvider() || otel.GetMeterProvider() != p.Telemetry.MeterProvider() {
				t.Error("the global providers are not Setup's")
			}
			ctx, exec := p.Telemetry.StartExecution(context.Background(), "s1", false)
			_, child := telemetry.Start(ctx, telemetry.SpanHostCall, trace.SpanKindInternal)
			child.End()
			exec.End(telemetry.Outcome{Kind: telemetry.OutcomeOK})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			span, ok := r.Span(telemetry.SpanExecute)
			if !ok {
				t.Fatalf("no %s span; got %v", telemetry.SpanExecute, r.SpanNames())
			}
			if span.Service != tc.service || span.Attributes[string(telemetry.AttrSessionID)] != "s1" || span.Scope != telemetry.ScopeName {
				t.Errorf("span %+v; want service %q, session s1", span, tc.service)
			}
			if _, ok := r.Span(telemetry.SpanHostCall); !ok {
				t.Errorf("no child span; got %v", r.SpanNames())
			}
			m, ok := r.Metric("monty.execution.duration")
			if !ok || m.Service != tc.service {
				t.Errorf("metric %+v (%v); want monty.execution.duration of %q in %v", m, ok, tc.service, r.Metrics())
			}
		})
	}
}
