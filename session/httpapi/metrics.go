package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monty-go/monty/session/store"
)

// metrics are the counters behind GET /metrics, in Prometheus text format.
type metrics struct {
	requests       labelled // by "endpoint,code"
	execs          labelled // by outcome: ok, exception, limit, error, type_error, paused
	checks         labelled // POST /check by outcome: clean, problems
	limits         labelled // 422s by code
	rejected       atomic.Int64
	uploads        atomic.Int64
	invalidUploads atomic.Int64
	largeUploads   atomic.Int64
	downloads      atomic.Int64
	fileUploads    atomic.Int64
	fileDownloads  atomic.Int64
	execDuration   *histogram
	stateSize      *histogram
}

func newMetrics() *metrics {
	return &metrics{
		execDuration: newHistogram(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
		stateSize:    newHistogram(256, 1<<10, 4<<10, 16<<10, 64<<10, 256<<10, 1<<20, 4<<20, 16<<20, 64<<20),
	}
}

func (m *metrics) request(endpoint string, status int) {
	m.requests.inc(endpoint + "," + strconv.Itoa(status))
}

// labelled is a family of counters keyed by a label value.
type labelled struct {
	mu sync.Mutex
	n  map[string]int64
}

func (l *labelled) inc(key string) {
	l.mu.Lock()
	if l.n == nil {
		l.n = map[string]int64{}
	}
	l.n[key]++
	l.mu.Unlock()
}

// snapshot returns the keys sorted and their counts.
func (l *labelled) snapshot() ([]string, map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := make(map[string]int64, len(l.n))
	for k, v := range l.n {
		c[k] = v
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, c
}

// histogram counts observations in cumulative buckets.
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []int64 // per bucket, not cumulative; last is +Inf
	sum    float64
	total  int64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]int64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.total++
	h.mu.Unlock()
}

func (h *histogram) write(w io.Writer, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", name, h.total, name, strconv.FormatFloat(h.sum, 'g', -1, 64), name, h.total)
}

func counter(w io.Writer, name, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
}

func gauge(w io.Writer, name, help string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, strconv.FormatFloat(v, 'g', -1, 64))
}

func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) *apiError {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m := h.metrics
	keys, counts := m.requests.snapshot()
	fmt.Fprint(w, "# HELP monty_http_requests_total HTTP requests by endpoint and status code.\n# TYPE monty_http_requests_total counter\n")
	for _, k := range keys {
		endpoint, code, _ := strings.Cut(k, ",")
		fmt.Fprintf(w, "monty_http_requests_total{endpoint=%q,code=%q} %d\n", endpoint, code, counts[k])
	}
	keys, counts = m.execs.snapshot()
	fmt.Fprint(w, "# HELP monty_executions_total Executions by outcome: ok, exception (Python raised), limit (the code ran into a limit: 422), error (the call failed: store, conflict, cancelled), type_error (a type check refused the code: 422).\n# TYPE monty_executions_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(w, "monty_executions_total{outcome=%q} %d\n", k, counts[k])
	}
	keys, counts = m.checks.snapshot()
	fmt.Fprint(w, "# HELP monty_type_checks_total Type checks (POST /check) by outcome: clean, problems.\n# TYPE monty_type_checks_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(w, "monty_type_checks_total{outcome=%q} %d\n", k, counts[k])
	}
	keys, counts = m.limits.snapshot()
	fmt.Fprint(w, "# HELP monty_execution_limits_total Executions stopped by a limit (422), by error code.\n# TYPE monty_execution_limits_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(w, "monty_execution_limits_total{limit=%q} %d\n", k, counts[k])
	}
	counter(w, "monty_executions_rejected_total", "Executions, uploads and downloads refused with 429 because every slot was busy.", m.rejected.Load())
	gauge(w, "monty_executions_running", "Executions, uploads and downloads in progress now.", float64(h.running.Load()))
	gauge(w, "monty_executions_capacity", "Executions, uploads and downloads that may be in progress at once.", float64(cap(h.slots)))
	m.execDuration.write(w, "monty_execution_duration_seconds", "Time to load, run and store a session, per execution.")
	m.stateSize.write(w, "monty_state_size_bytes", "Size of stored state blobs after executions and uploads.")
	counter(w, "monty_state_uploads_total", "State blobs accepted by POST /state/{id}.", m.uploads.Load())
	counter(w, "monty_state_uploads_invalid_total", "Uploaded state blobs refused as invalid (bad format, checksum or signature: also another session's or API key's blob).", m.invalidUploads.Load())
	counter(w, "monty_state_uploads_too_large_total", "Uploaded state blobs refused as too large (the blob, or the dump it declares).", m.largeUploads.Load())
	counter(w, "monty_state_downloads_total", "State blobs served by GET /state/{id}.", m.downloads.Load())
	counter(w, "monty_file_uploads_total", "Session files written by PUT /state/{id}/files/{path}.", m.fileUploads.Load())
	counter(w, "monty_file_downloads_total", "Session files served by GET /state/{id}/files/{path}.", m.fileDownloads.Load())
	return nil
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
	if _, err := h.opts.Store.Stat(ctx, healthProbeID); err != nil && !errors.Is(err, store.ErrNotFound) {
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
