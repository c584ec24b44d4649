// Package otlpenv sets up the OpenTelemetry SDK and its OTLP exporters from
// the standard OTEL_* environment variables, for programs such as
// `monty serve` and `monty mcp`. It is apart from package telemetry so that
// programs using monty as a library link neither the SDK nor gRPC unless
// they ask for it.
//
// The rules, per signal (traces, metrics):
//
//   - OTEL_SDK_DISABLED=true exports nothing.
//   - OTEL_TRACES_EXPORTER (OTEL_METRICS_EXPORTER) "otlp" exports the
//     signal, "none" does not; any other value is an error (no console or
//     Zipkin exporter is built in).
//   - When the variable is unset, the signal is exported only when an OTLP
//     endpoint is set: OTEL_EXPORTER_OTLP_ENDPOINT, or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT).
//     The specification's default is otlp, but a server whose operator
//     configured nothing would then send to localhost:4318 and log an export
//     failure every few seconds for as long as it runs.
//   - The protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
//     (OTEL_EXPORTER_OTLP_METRICS_PROTOCOL), else OTEL_EXPORTER_OTLP_PROTOCOL,
//     else http/protobuf. "grpc" selects the gRPC exporter; "http/json" is
//     an error, for the Go exporters do not implement it.
//
// The exporters read everything else themselves: endpoints, headers,
// timeouts, compression, certificates, OTEL_EXPORTER_OTLP_INSECURE and the
// metrics temporality preference. The SDK reads OTEL_TRACES_SAMPLER,
// OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_* and OTEL_METRIC_EXPORT_INTERVAL (and
// _TIMEOUT). The resource is OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
// over the SDK's telemetry.sdk.* attributes, with service.name defaulting to
// the name the program gives Setup.
//
// When a signal is exported its provider also becomes the global one
// (otel.SetTracerProvider, otel.SetMeterProvider), so that other
// instrumentation in the process reports to it too, and the global
// propagator becomes W3C Trace Context and Baggage (OTEL_PROPAGATORS is not
// read).
package otlpenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/monty-go/monty/session/telemetry"
)

// The protocols of OTEL_EXPORTER_OTLP_PROTOCOL that Setup accepts.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Signal says whether and where one signal (traces or metrics) is
// exported.
type Signal struct {
	// Protocol is ProtocolHTTP or ProtocolGRPC; "" when the signal is not
	// exported.
	Protocol string
	// Endpoint is where the exporter sends, as far as the environment says
	// (without user information or query), or the exporter's default.
	Endpoint string
}

// Enabled reports whether the signal is exported.
func (s Signal) Enabled() bool { return s.Protocol != "" }

// String describes the signal for a log line: "off", or the protocol and
// the endpoint.
func (s Signal) String() string {
	if !s.Enabled() {
		return "off"
	}
	return "otlp " + s.Protocol + " " + s.Endpoint
}

// Providers are the SDK providers Setup made.
type Providers struct {
	// Telemetry reports to the providers; nil when nothing is exported
	// (the options of monty's packages then use telemetry.Default, the
	// global providers, which are no-ops unless someone set them).
	Telemetry *telemetry.Telemetry
	// Traces and Metrics say what is exported.
	Traces, Metrics Signal

	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// Enabled reports whether any signal is exported. A nil *Providers has
// none.
func (p *Providers) Enabled() bool {
	return p != nil && (p.Traces.Enabled() || p.Metrics.Enabled())
}

// Shutdown exports what is still buffered and stops the providers, within
// ctx. It does nothing when nothing is exported, or the second time. It
// is not safe to call concurrently.
func (p *Providers) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.tp != nil {
		if err := p.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing traces: %w", err))
		}
		p.tp = nil
	}
	if p.mp != nil {
		if err := p.mp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing metrics: %w", err))
		}
		p.mp = nil
	}
	return errors.Join(errs...)
}

// Setup reads the OTEL_* environment variables (see the package doc) and
// makes the providers and exporters they ask for, with service.name
// serviceName unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name
// another. It fails on a configuration it cannot follow, naming the
// variable. Metrics also go to readers (the Prometheus exporter of
// package scrape, say), unless OTEL_SDK_DISABLED is true. When nothing is
// to be exported and there are no readers it returns Providers with a nil
// Telemetry and changes no global. Call Shutdown before the program exits,
// so that the last spans are sent.
func Setup(ctx context.Context, serviceName string, readers ...sdkmetric.Reader) (*Providers, error) {
	p := &Providers{}
	disabled, err := sdkDisabled()
	switch {
	case err != nil:
		return nil, err
	case disabled:
		return p, nil
	}
	if p.Traces, err = signalFromEnv(traces); err != nil {
		return nil, err
	}
	if p.Metrics, err = signalFromEnv(metrics); err != nil {
		return nil, err
	}
	if !p.Enabled() && len(readers) == 0 {
		return p, nil
	}
	res, err := newResource(ctx, serviceName)
	if err != nil {
		return nil, err
	}
	if p.Traces.Enabled() {
		exp, err := newSpanExporter(ctx, p.Traces.Protocol)
		if err != nil {
			return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
		}
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	if p.Metrics.Enabled() {
		exp, err := newMetricExporter(ctx, p.Metrics.Protocol)
		if err != nil {
			_ = p.Shutdown(ctx)
			return nil, fmt.Errorf("the OTLP metric exporter: %w", err)
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(exp))
	}
	if len(readers) > 0 {
		opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, r := range readers {
			opts = append(opts, sdkmetric.WithReader(r))
		}
		p.mp = sdkmetric.NewMeterProvider(opts...)
	}
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	cfg := telemetry.Options{Propagator: prop}
	if p.tp != nil {
		cfg.TracerProvider = p.tp
		otel.SetTracerProvider(p.tp)
	}
	if p.mp != nil {
		cfg.MeterProvider = p.mp
		otel.SetMeterProvider(p.mp)
	}
	otel.SetTextMapPropagator(prop)
	p.Telemetry = telemetry.New(cfg)
	return p, nil
}

// signal names the variables of one signal.
type signal struct {
	name        string // "traces", "metrics"
	exporterVar string // OTEL_TRACES_EXPORTER
	endpointVar string // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	protocolVar string // OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
	httpPath    string // appended to OTEL_EXPORTER_OTLP_ENDPOINT over HTTP
}

var (
	traces = signal{"traces", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"/v1/traces"}
	metrics = signal{"metrics", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"/v1/metrics"}
)

const (
	endpointVar = "OTEL_EXPORTER_OTLP_ENDPOINT"
	protocolVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
	disabledVar = "OTEL_SDK_DISABLED"
)

// env returns the trimmed value of an environment variable.
func env(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// sdkDisabled reads OTEL_SDK_DISABLED: true or false, any case; unset or
// empty is false.
func sdkDisabled() (bool, error) {
	switch strings.ToLower(env(disabledVar)) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want true or false", disabledVar, os.Getenv(disabledVar))
}

// signalFromEnv applies the package's rules to one signal.
func signalFromEnv(s signal) (Signal, error) {
	own, general := env(s.endpointVar), env(endpointVar)
	switch exp := strings.ToLower(env(s.exporterVar)); exp {
	case "none":
		return Signal{}, nil
	case "":
		if own == "" && general == "" {
			return Signal{}, nil
		}
	case "otlp":
	default:
		return Signal{}, fmt.Errorf("%s=%q: monty exports %s with otlp or not at all (none)", s.exporterVar, os.Getenv(s.exporterVar), s.name)
	}
	protoVar := s.protocolVar
	proto := env(protoVar)
	if proto == "" {
		protoVar, proto = protocolVar, env(protocolVar)
	}
	switch proto {
	case "", ProtocolHTTP:
		proto = ProtocolHTTP
	case ProtocolGRPC:
	case "http/json":
		return Signal{}, fmt.Errorf("%s=http/json: the Go OTLP exporters do not implement it; use http/protobuf or grpc", protoVar)
	default:
		return Signal{}, fmt.Errorf("%s=%q: use http/protobuf or grpc", protoVar, proto)
	}
	sig := Signal{Protocol: proto}
	switch {
	case own != "":
		sig.Endpoint = own
	case general != "" && proto == ProtocolHTTP:
		sig.Endpoint = strings.TrimSuffix(general, "/") + s.httpPath
	case general != "":
		sig.Endpoint = general
	case proto == ProtocolHTTP:
		sig.Endpoint = "localhost:4318" // the exporters' defaults
	default:
		sig.Endpoint = "localhost:4317"
	}
	sig.Endpoint = redact(sig.Endpoint)
	return sig, nil
}

// redact drops the user information and query of an endpoint URL, which
// may hold secrets, for the log.
func redact(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return endpoint
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// newResource describes the process: the SDK's attributes, service.name
// serviceName, then OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (the
// latter win).
func newResource(ctx context.Context, serviceName string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("the OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	return res, nil
}

func newSpanExporter(ctx context.Context, protocol string) (sdktrace.SpanExporter, error) {
	if protocol == ProtocolGRPC {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func newMetricExporter(ctx context.Context, protocol string) (sdkmetric.Exporter, error) {
	if protocol == ProtocolGRPC {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}
