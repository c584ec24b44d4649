// Package otlptest is an OTLP receiver for tests: it accepts traces and
// metrics over OTLP/HTTP (protobuf, gzip or not) or OTLP/gRPC on a loopback
// port and keeps what it got, for the test to look at after the exporter
// has flushed (a provider's Shutdown returns once its last export has been
// answered).
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // OTEL_EXPORTER_OTLP_COMPRESSION=gzip over gRPC
	"google.golang.org/protobuf/proto"
)

// Span is a span the receiver got.
type Span struct {
	// Name is the span's name.
	Name string
	// Service is the service.name of its resource.
	Service string
	// Scope is the name of its instrumentation scope.
	Scope string
	// Kind is the span's kind.
	Kind tracepb.Span_SpanKind
	// TraceID is the span's trace id, in hex.
	TraceID string
	// Attributes are the span's attributes, their values formatted as
	// strings.
	Attributes map[string]string
}

// Metric is a metric the receiver got.
type Metric struct {
	// Name is the metric's name.
	Name string
	// Service is the service.name of its resource.
	Service string
}

// Receiver collects the OTLP exports sent to Endpoint.
type Receiver struct {
	// Endpoint is the receiver's URL (http://127.0.0.1:PORT), for
	// OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string

	mu      sync.Mutex
	spans   []Span
	metrics []Metric
}

// NewHTTP starts an OTLP/HTTP receiver (POST /v1/traces, /v1/metrics),
// stopped at the end of the test.
func NewHTTP(t testing.TB) *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var msg colltracepb.ExportTraceServiceRequest
		if err := readProto(req, &msg); err != nil {
			t.Errorf("otlptest: POST /v1/traces: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addTraces(&msg)
		writeProto(w, &colltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var msg collmetricspb.ExportMetricsServiceRequest
		if err := readProto(req, &msg); err != nil {
			t.Errorf("otlptest: POST /v1/metrics: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addMetrics(&msg)
		writeProto(w, &collmetricspb.ExportMetricsServiceResponse{})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.Endpoint = srv.URL
	return r
}

// NewGRPC starts an OTLP/gRPC receiver (without TLS: set
// OTEL_EXPORTER_OTLP_INSECURE=true), stopped at the end of the test.
func NewGRPC(t testing.TB) *Receiver {
	r := &Receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlptest: %v", err)
	}
	srv := grpc.NewServer()
	colltracepb.RegisterTraceServiceServer(srv, traceService{r: r})
	collmetricspb.RegisterMetricsServiceServer(srv, metricsService{r: r})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	r.Endpoint = "http://" + ln.Addr().String()
	return r
}

type traceService struct {
	colltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, req *colltracepb.ExportTraceServiceRequest) (*colltracepb.ExportTraceServiceResponse, error) {
	s.r.addTraces(req)
	return &colltracepb.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	collmetricspb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(_ context.Context, req *collmetricspb.ExportMetricsServiceRequest) (*collmetricspb.ExportMetricsServiceResponse, error) {
	s.r.addMetrics(req)
	return &collmetricspb.ExportMetricsServiceResponse{}, nil
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Span returns the first span received with the name.
func (r *Receiver) Span(name string) (Span, bool) {
	for _, s := range r.Spans() {
		if s.Name == name {
			return s, true
		}
	}
	return Span{}, false
}

// SpanNames lists the names of the spans received so far, for failure
// messages.
func (r *Receiver) SpanNames() []string {
	var names []string
	for _, s := range r.Spans() {
		names = append(names, s.Name)
	}
	return names
}

// Metrics returns the metrics received so far (a metric exported several
// times appears several times).
func (r *Receiver) Metrics() []Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Metric(nil), r.metrics...)
}

// Metric returns the first metric received with the name.
func (r *Receiver) Metric(name string) (Metric, bool) {
	for _, m := range r.Metrics() {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

func (r *Receiver) addTraces(req *colltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := serviceName(rs.GetResource())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Name: sp.GetName(), Service: service, Scope: ss.GetScope().GetName(), Kind: sp.GetKind(),
					TraceID: hex.EncodeToString(sp.GetTraceId()), Attributes: attrMap(sp.GetAttributes())})
			}
		}
	}
}

func (r *Receiver) addMetrics(req *collmetricspb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		service := serviceName(rm.GetResource())
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.metrics = append(r.metrics, Metric{Name: m.GetName(), Service: service})
			}
		}
	}
}

func serviceName(res *resourcepb.Resource) string {
	return attrMap(res.GetAttributes())["service.name"]
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = valueString(kv.GetValue())
	}
	return m
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return fmt.Sprint(v.GetValue())
}

// readProto decodes a request body, gzip-compressed or not.
func readProto(req *http.Request, msg proto.Message) error {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return fmt.Errorf("Content-Type %q, want application/x-protobuf", ct)
	}
	body := io.Reader(req.Body)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return err
		}
		defer zr.Close()
		body = zr
	default:
		return fmt.Errorf("unknown Content-Encoding %q", enc)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, msg)
}

func writeProto(w http.ResponseWriter, msg proto.Message) {
	b, err := proto.Marshal(msg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}
