package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
)

// metrics are the HTTP API's instruments, beside those of its Telemetry
// (docs/telemetry.md): OpenTelemetry instruments, scraped at GET /metrics
// through Options.Metrics.
type metrics struct {
	requests       metric.Int64Counter // by endpoint and status code
	execs          metric.Int64Counter // by outcome: ok, exception, limit, error, type_error, paused
	checks         metric.Int64Counter // POST /check by outcome: clean, problems
	limits         metric.Int64Counter // 422s by code
	rejected       metric.Int64Counter
	uploads        metric.Int64Counter
	invalidUploads metric.Int64Counter
	largeUploads   metric.Int64Counter
	downloads      metric.Int64Counter
	fileUploads    metric.Int64Counter
	fileDownloads  metric.Int64Counter
	stateSize      metric.Int64Histogram
}

// newMetrics makes h's instruments on mp. The API's instruments never
// fail for a valid name; a provider that does fail gives a no-op
// instrument with its error, which is reported and then the right
// fallback.
func newMetrics(mp metric.MeterProvider, h *Handler) *metrics {
	m := mp.Meter(telemetry.ScopeName + "/session/httpapi")
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	out := &metrics{
		requests:       counter("monty.http.requests", "HTTP requests by endpoint and status code."),
		execs:          counter("monty.executions", "Executions by outcome: ok, exception (Python raised), limit (the code ran into a limit: 422), error (the call failed: store, conflict, cancelled), type_error (a type check refused the code: 422), paused (at client tool calls or approvals)."),
		checks:         counter("monty.type_checks", "Type checks (POST /check) by outcome: clean, problems."),
		limits:         counter("monty.execution.limits", "Executions stopped by a limit (422), by error code."),
		rejected:       counter("monty.executions.rejected", "Executions, uploads and downloads refused with 429 because every slot was busy."),
		uploads:        counter("monty.state.uploads", "State blobs accepted by POST /state/{id}."),
		invalidUploads: counter("monty.state.uploads.invalid", "Uploaded state blobs refused as invalid (bad format, checksum or signature: also another session's or API key's blob)."),
		largeUploads:   counter("monty.state.uploads.too_large", "Uploaded state blobs refused as too large (the blob, or the dump it declares)."),
		downloads:      counter("monty.state.downloads", "State blobs served by GET /state/{id}."),
		fileUploads:    counter("monty.file.uploads", "Session files written by PUT /state/{id}/files/{path}."),
		fileDownloads:  counter("monty.file.downloads", "Session files served by GET /state/{id}/files/{path}."),
	}
	// Every series known in advance is scraped as 0 before its first
	// count, so that rate() and alerts on absence work from the start.
	for _, c := range []metric.Int64Counter{out.rejected, out.uploads, out.invalidUploads, out.largeUploads, out.downloads, out.fileUploads, out.fileDownloads} {
		c.Add(context.Background(), 0)
	}
	for _, outcome := range executionOutcomes {
		out.execs.Add(context.Background(), 0, metric.WithAttributes(attribute.String("outcome", outcome)))
	}
	for _, outcome := range []string{"clean", "problems"} {
		out.checks.Add(context.Background(), 0, metric.WithAttributes(attribute.String("outcome", outcome)))
	}
	for _, code := range limitCodes() {
		out.limits.Add(context.Background(), 0, metric.WithAttributes(attribute.String("limit", code)))
	}
	// monty.http.requests: each endpoint's 200, as instrument registers it.
	var err error
	out.stateSize, err = m.Int64Histogram("monty.state.size", metric.WithUnit("By"),
		metric.WithDescription("Size of stored state blobs after executions and uploads."),
		metric.WithExplicitBucketBoundaries(256, 1<<10, 4<<10, 16<<10, 64<<10, 256<<10, 1<<20, 4<<20, 16<<20, 64<<20))
	errs = append(errs, err)
	_, err = m.Int64ObservableGauge("monty.executions.running", metric.WithDescription("Executions, uploads and downloads in progress now."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(h.running.Load()); return nil }))
	errs = append(errs, err)
	_, err = m.Int64ObservableGauge("monty.executions.capacity", metric.WithDescription("Executions, uploads and downloads that may be in progress at once."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(int64(cap(h.slots))); return nil }))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		otel.Handle(err)
	}
	return out
}

// executionOutcomes are the outcome labels of monty.executions.
var executionOutcomes = []string{"ok", "exception", "limit", "error", "type_error", "paused", "replayed"}

// limitCodes are the limit labels of monty.execution.limits: the 422
// codes of the runtime's limits and of the state's size.
func limitCodes() []string {
	codes := []string{codeStateTooLarge}
	for k := runtime.TimeLimit; k <= runtime.HostCallLimit; k++ {
		codes = append(codes, k.String())
	}
	return codes
}

// count adds one to c, with the attributes kv.
func count(c metric.Int64Counter, kv ...attribute.KeyValue) {
	c.Add(context.Background(), 1, metric.WithAttributes(kv...))
}

// endpoint makes the endpoint's series of 200s scraped as 0 before its
// first request.
func (m *metrics) endpoint(name string) {
	m.requests.Add(context.Background(), 0, metric.WithAttributes(attribute.String("endpoint", name), attribute.String("code", "200")))
}

func (m *metrics) request(endpoint string, status int) {
	count(m.requests, attribute.String("endpoint", endpoint), attribute.String("code", strconv.Itoa(status)))
}

func (m *metrics) execution(outcome string) { count(m.execs, attribute.String("outcome", outcome)) }

func (m *metrics) check(outcome string) { count(m.checks, attribute.String("outcome", outcome)) }

func (m *metrics) limit(code string) { count(m.limits, attribute.String("limit", code)) }

func (m *metrics) state(size int64) { m.stateSize.Record(context.Background(), size) }

// metricsNotServed answers GET /metrics when Options.Metrics is nil and
// Options.Session.Telemetry is not.
func metricsNotServed(w http.ResponseWriter, r *http.Request) *apiError {
	return &apiError{status: http.StatusNotFound, code: "metrics_not_served", msg: "this server reports its metrics to its OpenTelemetry MeterProvider and serves none here (httpapi.Options.Metrics is not set)"}
}

// Health is the body of GET /healthz.
type Health struct {
	// Status is "ok", or "unavailable" (with 503) when the store cannot be
	// reached, or "shutting_down".
	Status string `json:"status"`
	// Store is "ok", or what failed: the code of a /health/store check
	// ("store_unavailable", "timeout", ...) and what it means. The
	// store's own error, which names its hosts and paths, is logged.
	Store string `json:"store"`
	// Running and Capacity are the slots in use now (executions, state
	// uploads and downloads) and the number of slots.
	Running  int64 `json:"running"`
	Capacity int   `json:"capacity"`
}

// healthProbeID is an id that is never written: asking the store for it
// exercises the backend's read path.
const healthProbeID = "healthz/probe"

func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) *apiError {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	out := Health{Status: "ok", Store: "ok", Running: h.running.Load(), Capacity: cap(h.slots)}
	status := http.StatusOK
	if _, err := h.opts.Session.Store.Stat(ctx, healthProbeID); err != nil && !errors.Is(err, store.ErrNotFound) {
		// Anyone may ask: the store's own error (hosts, paths) is logged.
		code := checkCode(ctx, err)
		out.Status, out.Store, status = "unavailable", code+": "+checkMessages[code], http.StatusServiceUnavailable
		h.log.Warn("store health check failed", "check", "healthz", "error", code, "detail", redactSecrets(err.Error()))
	}
	h.mu.Lock()
	if h.draining {
		out.Status, status = "shutting_down", http.StatusServiceUnavailable
	}
	h.mu.Unlock()
	writeJSON(w, status, out)
	return nil
}
