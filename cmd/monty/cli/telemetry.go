//go:build !monty_lean

package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/monty-go/monty/session/telemetry/otlpenv"
)

// telemetryUsage is the OpenTelemetry paragraph of serve's and mcp's help.
const telemetryUsage = `OpenTelemetry: when OTEL_EXPORTER_OTLP_ENDPOINT (or a signal's own
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) is
set, or OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER is otlp, spans and
metrics are sent there over OTLP, http/protobuf or grpc
(OTEL_EXPORTER_OTLP_PROTOCOL). The other standard variables apply:
OTEL_SERVICE_NAME (default monty), OTEL_RESOURCE_ATTRIBUTES,
OTEL_EXPORTER_OTLP_HEADERS, _INSECURE, _COMPRESSION, OTEL_TRACES_SAMPLER,
OTEL_METRIC_EXPORT_INTERVAL; OTEL_*_EXPORTER=none or OTEL_SDK_DISABLED=true
turns export off. docs/telemetry.md lists the spans and metrics.
`

// telemetryServiceName is service.name unless OTEL_SERVICE_NAME says
// otherwise.
const telemetryServiceName = "monty"

// telemetryFlushTimeout bounds the export of the last spans and metrics at
// exit.
const telemetryFlushTimeout = 5 * time.Second

// startTelemetry sets up OpenTelemetry export from the OTEL_* variables
// (package otlpenv), metrics going to readers too, and logs where it goes. stop flushes and stops the
// exporters, logging a failure; call it after everything that makes spans
// has stopped. When nothing is configured the Telemetry of the providers is
// nil and stop does nothing.
func startTelemetry(ctx context.Context, log *slog.Logger, readers ...sdkmetric.Reader) (p *otlpenv.Providers, stop func(), err error) {
	p, err = otlpenv.Setup(ctx, telemetryServiceName, readers...)
	if err != nil {
		return nil, nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	if !p.Enabled() {
		return p, func() { _ = p.Shutdown(context.Background()) }, nil
	}
	// Export failures are reported through the global error handler:
	// into the log, not onto bare stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("OpenTelemetry export failed", "error", err)
	}))
	log.Info("OpenTelemetry export enabled", "traces", p.Traces.String(), "metrics", p.Metrics.String())
	return p, func() {
		ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			log.Warn("OpenTelemetry: the last spans and metrics could not be sent", "error", err, "timeout", telemetryFlushTimeout)
		}
	}, nil
}
