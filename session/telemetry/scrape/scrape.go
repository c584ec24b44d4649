// Package scrape serves OpenTelemetry metrics for Prometheus to scrape:
// OpenTelemetry's Prometheus exporter, a reader of a MeterProvider that
// collects its instruments at each scrape into a registry of its own, and
// the handler that serves that registry.
//
// The HTTP API serves it at GET /metrics. Instruments are named as
// OpenTelemetry names them ("monty.executions"), and scraped as Prometheus
// names them ("monty_executions_total": dots become underscores, a counter
// gets "_total", seconds "_seconds" and bytes "_bytes");
// docs/telemetry.md lists them.
package scrape

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// New returns the Prometheus exporter, to give a MeterProvider as a reader
// (sdkmetric.WithReader), and the handler serving what it reads in
// Prometheus's text format (or another format the scraper asks for). Scope
// labels are left out of the samples: every monty instrument has a name of
// its own. The handler is safe for concurrent use.
func New() (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("the Prometheus exporter: %w", err)
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), nil
}
