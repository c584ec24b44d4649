package scrape_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/monty-go/monty/session/telemetry/scrape"
)

func TestInstrumentsAreScrapedUnderPrometheusNames(t *testing.T) {
	reader, handler, err := scrape.New()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m := mp.Meter("test")
	c, err := m.Int64Counter("monty.things")
	require.NoError(t, err)
	c.Add(context.Background(), 3, metric.WithAttributes(attribute.String("monty.kind", "a")))
	h, err := m.Float64Histogram("monty.wait.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	require.NoError(t, err)
	h.Record(context.Background(), 0.5)

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	assert.Contains(t, string(body), `monty_things_total{monty_kind="a"} 3`)
	assert.Contains(t, string(body), `monty_wait_duration_seconds_bucket{le="1"} 1`)
	assert.NotContains(t, string(body), "otel_scope_name", "scope labels are left out")

	// Each call is a registry of its own.
	_, other, err := scrape.New()
	require.NoError(t, err)
	rec = httptest.NewRecorder()
	other.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.NotContains(t, rec.Body.String(), "monty_things_total")
}
