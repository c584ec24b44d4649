// Package httpapi serves Monty sessions over HTTP: a net/http Handler that
// `monty serve` runs and that a serverless function can import, shaped after
// a production code-execution service with client-side state caching.
//
// Endpoints (see docs/http.md for the full reference):
//
//	POST   /exec               run code, optionally in a session; a new session id when none is given;
//	                           "tools" the client answers pause the run (status "paused", a run_id)
//	POST   /runs/{run_id}/resume   the results of a paused run's calls: it goes on, on any instance
//	GET    /state/{id}         the session's state blob (ETag = its sha256; If-None-Match → 304)
//	POST   /state/{id}         upload a blob downloaded earlier → 201; it is used by the next /exec
//	DELETE /state/{id}         delete the state → 204
//	GET    /state/{id}/info    exists, size, hash, created_at, expires_at, source
//	GET    /state/{id}/files          the session's files under /work: path, size, modified
//	GET    /state/{id}/files/{path}   one file's bytes
//	PUT    /state/{id}/files/{path}   create or replace a file (the body) → 201 or 200
//	DELETE /state/{id}/files/{path}   remove a file → 204
//	GET    /healthz            liveness and store health (no API key needed)
//	GET    /health             liveness only (no API key needed)
//	GET    /health/store       a write-read-delete round trip through the store → 200 or 503
//	GET    /metrics            Prometheus text metrics (no API key needed)
//	       /ui/                the operator console (package console): pages signed in with an API key;
//	                           Options.DisableConsole removes it
//
// Every request reads the session from the Store and writes it back, so the
// handler keeps no session in memory between requests: any instance sharing
// the store (Redis, S3, a tiered pair) continues any session, and a blob
// uploaded through POST /state/{id} is what the next execution sees.
//
// Sessions have files: what the code writes under /work (its working
// directory) is stored with the session's state, bounded by
// Options.MaxFileBytes, and can be listed, downloaded, uploaded and removed
// through /state/{id}/files (see docs/files.md).
//
// Stored state that cannot be loaded (damaged, truncated, of another
// format, written for another session or API key, signed with another
// key, or a file the store cannot read) is kept aside and the session
// starts empty; the answer says so in "state_warning" and the log has a
// record. Options.FailOnCorruptState fails such executions with 500
// "state_corrupt" instead.
//
// Security: with API keys configured every request but /healthz, /health
// and /metrics needs a valid x-api-key (compared in constant time), and each key
// has its own namespace of session ids, so another key's id behaves as not
// found: session id ID is stored as "k<24 hex of the key's sha256>/ID", or
// "public/ID" when no keys are configured. State blobs are signed with
// HMAC-SHA256 under a key derived from Options.Session.SigningKey, the namespace and
// the session id, so a blob verifies only for the session (and API key) it
// was written for; an uploaded blob is checked (format, checksum, signature,
// declared size) before it is stored, and nothing unverified ever reaches
// Monty's deserialiser. Request bodies, per-request limits, results and
// concurrency are bounded: executions, uploads and downloads take a slot,
// and when every slot is busy a request is refused at once with 429 rather
// than queued.
//
// Code that runs into a limit (time, memory, recursion, output, integer
// size, result size, host calls) gets 422 with the limit's code
// (runtime.LimitKind.String()) and what it printed; a Python exception is a
// 200 with exit_code 1. No failure caused by the code is a 5xx.
package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/telemetry/scrape"
	"github.com/monty-go/monty/session/tools"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for zero Options fields.
const (
	// DefaultMaxBody bounds the body of POST /exec.
	DefaultMaxBody = 1 << 20
	// DefaultMaxResult bounds the result of one execution (the encoded value
	// as it leaves the sandbox, and its JSON and repr in the answer) when
	// Options.Session.Limits.MaxResult is 0.
	DefaultMaxResult = 16 << 20
	// DefaultMaxOutput bounds the print() output of one execution when
	// Options.Session.Limits.MaxOutput is 0.
	DefaultMaxOutput = 1 << 20
	// MinSigningKey is the shortest accepted Options.Session.SigningKey, in bytes.
	MinSigningKey = 16
)

// ErrConfig is wrapped by every error New returns for bad Options.
var ErrConfig = errors.New("httpapi: invalid configuration")

// Options configure a Handler.
type Options struct {
	// Session configures the sessions the API runs, as session.Options
	// does for one session:
	//   - Store keeps session state. Required. The Handler does not close it.
	//   - SigningKey is the secret state blobs are signed with
	//     (HMAC-SHA256). Each session's blobs are signed with a key derived
	//     from it, the API key's namespace and the session id (see
	//     docs/http.md, "Threat model"), so a blob verifies only for the
	//     session it was written for. Blobs signed with SigningKey itself
	//     (written before that binding) still load, and are signed with the
	//     session's key when next saved. Required, at least MinSigningKey
	//     bytes; every instance sharing a store needs the same key.
	//   - Engine runs the interpreters; nil means runtime.Default.
	//   - Limits are the server's maxima for one execution, and the limits
	//     of a request that asks for none. A request's own limits are
	//     clamped to them. As everywhere, a zero field is the default and
	//     runtime.Unlimited none: a zero MaxDuration or MaxMemory is
	//     DefaultLimits()'s, a zero MaxOutput or MaxResult DefaultMaxOutput
	//     or DefaultMaxResult (at most MaxMemory: an answer is always
	//     bounded), and MaxHostCalls bounds the host calls of one execution
	//     (file, environment and clock calls, host functions, MCP tools;
	//     past it 422 "host_call_limit").
	//   - MaxStateSize caps a stored blob and an upload (default
	//     session.DefaultMaxStateSize). An upload whose dump declares more
	//     bytes than Limits.MaxMemory is refused too: it could not be
	//     loaded.
	//   - CaptureOnError stores the state a call leaves when its code
	//     raises (seed 004's STATE_CAPTURE_ON_ERROR); by default such a
	//     call leaves the session as it was before the call.
	//   - Ephemeral turns state persistence off (seed 004's
	//     STATE_PERSISTENCE_ENABLED=false): every execution starts with an
	//     empty namespace and stores nothing ("state_note" says so), and
	//     uploads of state and session files are refused with 403
	//     "persistence_disabled". State stored earlier can still be read
	//     and deleted.
	//   - Telemetry receives a server span per request (its parent is the
	//     W3C traceparent of the request, when it has one), the spans of
	//     the executions and store operations below it, and the HTTP and
	//     execution metrics; nil means telemetry.Default (the global
	//     OpenTelemetry providers), except that with Metrics nil too the
	//     metrics go to a MeterProvider of the Handler's own, served at GET
	//     /metrics.
	// Its other fields are not used: the API sets a session's Host, keys,
	// files and pool itself (OS, Mounts, Functions, MaxFileBytes,
	// FailOnCorruptState, Warm).
	Session session.Options
	// Warm is how many interpreters are kept instantiated in the background,
	// so a request does not wait for one: 0 means 2, negative none.
	Warm int
	// Keeper is the keeper of live sessions the Handler claims its
	// sessions from (required): the process's one keeper, shared with its
	// other surfaces (a monty.v1 server, an MCP executor), so that a
	// session one of them holds is busy for the others. How many sessions
	// it keeps open between requests (ManagerOptions.MaxLive) is how many
	// continue without loading their state again (each request still
	// checks the store's version, and loads only when another instance
	// moved it). Its session options are not used: each request opens
	// its session with its own. With Session.Ephemeral, a request's
	// session is closed at its end. The Handler does not close it.
	Keeper *session.Manager
	// APIKeys, when not empty, are the accepted x-api-key values; each key
	// sees only the sessions created with it. Empty means no authentication
	// (every client shares one namespace).
	APIKeys []string
	// KeyNames names API keys (the key, as in APIKeys, to its name) for
	// the audit of approvals: a decision on an approval call made with a
	// key records its name (docs/http.md, "Approvals"); a key without a
	// name is recorded by its namespace ("key k…", derived from the key,
	// never the key itself). Names are not secret: they are stored,
	// logged and traced.
	KeyNames map[string]string
	// ClaimLease is how long the claim of a paused run holds while a
	// resume makes its approved calls (session.ResumeOptions.Lease): a
	// resume not done by then is taken to have died, and the next one
	// lists the run again, the calls marked may_have_run. 0 means the
	// request's time limit for each approved call and for the run, plus
	// session.ClaimMargin (session.DefaultClaimLease without a time
	// limit). Too short a lease never makes a call twice: it reports a
	// call that is still running as may have run.
	ClaimLease time.Duration
	// MaxBody caps the body of POST /exec (default DefaultMaxBody).
	MaxBody int64
	// MaxFileBytes caps each session's files under /work: their contents
	// plus the length of every path (default session.DefaultMaxFileBytes,
	// at most MaxStateSize). Negative turns session files off: the code
	// has no /work and the /state/{id}/files endpoints answer 404.
	MaxFileBytes int64
	// MaxConcurrent bounds the executions, state uploads and state
	// downloads in progress at once; more get 429 at once. Default:
	// 2 × GOMAXPROCS.
	MaxConcurrent int
	// Logger receives one structured record per request; nil means
	// slog.Default().
	Logger *slog.Logger
	// Metrics serves GET /metrics: the Prometheus exposition of
	// Telemetry's MeterProvider, as package scrape makes it (its reader
	// given to that provider). Nil with a Telemetry: GET /metrics answers
	// 404 metrics_not_served, the metrics going to Telemetry's provider
	// only.
	Metrics http.Handler
	// Checker type-checks the code of requests that ask for it (POST
	// /check, "type_check" on POST /exec); nil means typecheck.Default,
	// compiled at the first such request.
	Checker *typecheck.Checker
	// Stubs is stub (.pyi) text added to every check: names the server's
	// sandbox provides.
	Stubs string
	// Mounts are host directories the operator puts in every request's
	// sandbox; clients only ever see their guest paths. They are opened
	// afresh for each request (a spec that no longer opens fails the
	// request with 500), so what the code writes to an overlay mount
	// belongs to that request alone and is gone when it ends, and its
	// write limit and memory budget are per request; a read-write mount
	// writes to the host directory, which every request shares.
	Mounts []vfs.MountSpec
	// RunTTL is how long a run paused at client tool calls waits for its
	// resume; 0 means session.DefaultRunTTL.
	RunTTL time.Duration
	// OS serves the file, environment and clock calls the mounts do not;
	// nil denies them. Clients can never name a host path: only what the
	// operator configured is reachable.
	OS runtime.OSHandler
	// Functions are Go host functions every execution's code can call
	// (with list_functions() and help()); nil offers none. A request that
	// streams its events sees their calls as tool calls.
	Functions *tools.Registry
	// FailOnCorruptState makes an execution whose stored state cannot be
	// loaded fail with 500 "state_corrupt". By default the session starts
	// empty and the answer says so in "state_warning" (and the log has a
	// record). The state is kept aside either way, never overwritten
	// before a copy exists.
	FailOnCorruptState bool
	// HealthTimeout bounds the store round trip of GET /health/store
	// (default DefaultHealthTimeout).
	HealthTimeout time.Duration
	// AuthGuard counts failed authentications by client address (the
	// API's x-api-key and its console's sign-in): past its threshold an
	// address's failures get 429 "too_many_auth_failures" with
	// Retry-After, and a valid key still works. Nil: a Guard of the
	// Handler's own, with apikey's defaults. monty serve shares one with
	// its monty.v1 server.
	AuthGuard *apikey.Guard
	// DisableConsole removes the operator console (package console) from
	// /ui: its paths then answer 404 as any unknown path does. By default
	// it is served, behind the same API keys as the API (docs/http.md,
	// "Console").
	DisableConsole bool
}

// Handler is the HTTP API. It is safe for concurrent use.
type Handler struct {
	opts    Options
	mux     *http.ServeMux
	serve   http.Handler     // the mux behind otelhttp's server span
	badPath http.HandlerFunc // answers a path with dot segments
	log     *slog.Logger
	keys    apikey.Set
	// names are the KeyNames by namespace.
	names   map[string]string
	slots   chan struct{}
	metrics *metrics

	base     context.Context // cancelled to stop running executions
	stop     context.CancelFunc
	mu       sync.Mutex // guards draining with inflight.Add
	draining bool
	inflight sync.WaitGroup
	running  atomic.Int64

	poolOnce sync.Once
	pool     *runtime.Pool    // warm interpreters, started on first use
	keeper   *session.Manager // sessions claimed by requests, and open between them
	guard    *apikey.Guard    // failed authentications by address
	// keysInFlight are the idempotency keys of the requests running here
	// (holdKey).
	keysInFlight sync.Map

	probe probe // GET /health/store
}

// DefaultLimits are the server's maxima when Options.Session.Limits is the zero
// value: 30 s of run time, 256 MiB of heap, the interpreter's recursion and
// integer size defaults, 1 MiB of print output and a 16 MiB result per
// execution. (runtime.DefaultLimits has no time or memory limit: right for
// trusted code, not for a service.)
func DefaultLimits() runtime.Limits {
	return runtime.Limits{MaxDuration: 30 * time.Second, MaxMemory: 256 << 20, MaxOutput: DefaultMaxOutput, MaxResult: DefaultMaxResult}
}

// shutdownGrace is how long Shutdown waits, after cancelling the running
// executions, for them to stop.
const shutdownGrace = 5 * time.Second

// New checks opts and returns a Handler.
func New(opts Options) (*Handler, error) {
	if err := opts.withDefaults(); err != nil {
		return nil, err
	}
	h := &Handler{opts: opts, log: opts.Logger, slots: make(chan struct{}, opts.MaxConcurrent)}
	h.metrics = newMetrics(opts.Session.Telemetry.MeterProvider(), h)
	h.keeper = opts.Keeper
	h.keys = apikey.New(opts.APIKeys)
	if h.guard = opts.AuthGuard; h.guard == nil {
		h.guard = apikey.NewGuard(apikey.GuardOptions{})
	}
	h.names = map[string]string{}
	for key, name := range opts.KeyNames {
		ns, ok := h.keys.Namespace(key)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: KeyNames names a key that is not one of APIKeys, or gives it an empty name", ErrConfig)
		}
		h.names[ns] = name
	}
	h.base, h.stop = context.WithCancel(context.Background())
	h.mux = http.NewServeMux()
	h.routes()
	if !opts.DisableConsole {
		if err := h.mountConsole(); err != nil {
			return nil, err
		}
	}
	h.serve = otelhttp.NewHandler(http.HandlerFunc(h.route404), "monty",
		otelhttp.WithTracerProvider(opts.Session.Telemetry.TracerProvider()),
		otelhttp.WithMeterProvider(opts.Session.Telemetry.MeterProvider()),
		otelhttp.WithPropagators(opts.Session.Telemetry.Propagator()),
		otelhttp.WithFilter(traced))
	h.badPath = h.instrument("other", invalidPath)
	return h, nil
}

// withDefaults checks o and fills in its defaults: the limits, sizes and
// capacity, a Telemetry (with metrics of the Handler's own when neither it
// nor Metrics is given), the logger.
func (o *Options) withDefaults() error {
	if o.Keeper == nil {
		return fmt.Errorf("%w: Options.Keeper is required: the process's keeper of live sessions (session.NewManager), shared by its surfaces", ErrConfig)
	}
	if o.Session.Store == nil {
		o.Session.Store = o.Keeper.Store()
	}
	switch {
	case o.Session.Store == nil:
		return fmt.Errorf("%w: Options.Session.Store is required (the Keeper has none)", ErrConfig)
	case len(o.Session.SigningKey) < MinSigningKey:
		return fmt.Errorf("%w: Options.Session.SigningKey must be at least %d bytes (uploaded state is trusted only when its signature verifies)", ErrConfig, MinSigningKey)
	case o.ClaimLease < 0:
		return fmt.Errorf("%w: ClaimLease is negative", ErrConfig)
	case slices.Contains(o.APIKeys, ""):
		return fmt.Errorf("%w: an API key is empty", ErrConfig)
	}
	l, d := &o.Session.Limits, DefaultLimits()
	if l.MaxDuration == 0 {
		l.MaxDuration = d.MaxDuration
	}
	if l.MaxMemory == 0 {
		l.MaxMemory = d.MaxMemory
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.MaxResult == 0 {
		l.MaxResult = DefaultMaxResult
		if m := l.MaxMemory; m > 0 {
			l.MaxResult = min(l.MaxResult, m)
		}
	}
	if o.Session.MaxStateSize <= 0 {
		o.Session.MaxStateSize = session.DefaultMaxStateSize
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = session.DefaultMaxFileBytes
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 2 * goruntime.GOMAXPROCS(0)
	}
	if o.HealthTimeout <= 0 {
		o.HealthTimeout = DefaultHealthTimeout
	}
	if o.Metrics == nil && o.Session.Telemetry == nil {
		// Metrics of its own, served at /metrics; spans go to the global
		// tracer provider.
		reader, handler, err := scrape.New()
		if err != nil {
			return err
		}
		o.Session.Telemetry = telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
		o.Metrics = handler
	}
	o.Session.Telemetry = o.Session.Telemetry.Or()
	o.Session.Store = o.Session.Telemetry.Store(o.Session.Store)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// routes registers the API's endpoints (the console is mounted apart).
func (h *Handler) routes() {
	h.route("POST /exec", "exec", h.exec)
	h.route("POST /check", "check", h.check)
	h.route("POST /runs/{run_id}/resume", "resume", h.resume)
	h.route("GET /state/{id}", "state_get", h.getState)
	uploadState, putFile, deleteFile := h.uploadState, h.putFile, h.deleteFile
	if h.opts.Session.Ephemeral {
		uploadState, putFile, deleteFile = persistenceOff, persistenceOff, persistenceOff
	}
	h.route("POST /state/{id}", "state_upload", uploadState)
	h.route("DELETE /state/{id}", "state_delete", h.deleteState)
	h.route("GET /state/{id}/info", "state_info", h.stateInfo)
	h.route("GET /state/{id}/files", "files_list", h.listFiles)
	h.route("GET /state/{id}/files/{path...}", "file_get", h.getFile)
	h.route("PUT /state/{id}/files/{path...}", "file_put", putFile)
	h.route("DELETE /state/{id}/files/{path...}", "file_delete", deleteFile)
	h.mux.HandleFunc("GET /healthz", h.instrument("healthz", h.healthz))
	h.mux.HandleFunc("GET /health", h.instrument("health", h.health))
	h.route("GET /health/store", "health_store", h.healthStore)
	serveMetrics := metricsNotServed
	if m := h.opts.Metrics; m != nil {
		serveMetrics = func(w http.ResponseWriter, r *http.Request) *apiError {
			m.ServeHTTP(w, r)
			return nil
		}
	}
	h.mux.HandleFunc("GET /metrics", h.instrument("metrics", serveMetrics))
	for path, allow := range map[string]string{"/exec": "POST", "/check": "POST", "/state/{id}": "GET, POST, DELETE", "/state/{id}/info": "GET",
		"/state/{id}/files": "GET", "/state/{id}/files/{path...}": "GET, PUT, DELETE", "/runs/{run_id}/resume": "POST", "/healthz": "GET", "/metrics": "GET",
		"/health": "GET", "/health/store": "GET"} {
		h.mux.HandleFunc(path, h.instrument("other", func(w http.ResponseWriter, r *http.Request) *apiError {
			w.Header().Set("Allow", allow)
			return &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: r.Method + " is not allowed on " + r.URL.Path + "; use " + allow}
		}))
	}
	h.mux.HandleFunc("/", h.instrument("other", func(w http.ResponseWriter, r *http.Request) *apiError {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: r.Method + " " + r.URL.Path + " is not an endpoint of this API (see /exec, /runs/{run_id}/resume, /check, /state/{id}, /state/{id}/files, /healthz, /health, /health/store, /metrics)"}
	}))
}

// Limits are the server's maxima for one execution, with the defaults
// applied.
func (h *Handler) Limits() runtime.Limits { return h.opts.Session.Limits }

// Capacity is the number of executions (and state transfers) that may run
// at once.
func (h *Handler) Capacity() int { return cap(h.slots) }

// ServeHTTP implements http.Handler. A request path with a "." or ".."
// segment, raw or percent-encoded, or an empty one (a//b) is refused with
// 400 "invalid_path" before it is routed, on every route: it is never
// cleaned and redirected, so that a path names exactly what the client
// sent.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serve.ServeHTTP(w, r)
}

// route404 routes a request, once its span is started.
func (h *Handler) route404(w http.ResponseWriter, r *http.Request) {
	if dotSegments(r.URL.Path) {
		h.badPath(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// traced tells which requests get a span: all but the probes and the
// scrapes (GET or HEAD /healthz, /health, /metrics), which would fill
// traces with a span every few seconds.
func traced(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/health", "/metrics":
		return r.Method != http.MethodGet && r.Method != http.MethodHead
	}
	return true
}

// semconvRoute is OpenTelemetry's http.route: the matched pattern.
const semconvRoute = attribute.Key("http.route")

// dotSegments reports whether the (decoded) request path p has a "." or
// ".." segment, or an empty one other than the last (a trailing slash).
func dotSegments(p string) bool {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "." || s == ".." || s == "" && i > 0 && i < len(segs)-1 {
			return true
		}
	}
	return false
}

// invalidPath answers a request path that dotSegments refuses.
func invalidPath(w http.ResponseWriter, r *http.Request) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeInvalidPath, msg: fmt.Sprintf(
		"the request path %q has a \".\" or \"..\" segment (perhaps percent-encoded) or an empty one: name sessions, runs and files by their plain path, such as /state/{id}/files/reports/out.csv (a file path is relative to /work)", r.URL.Path)}
}

// codeInvalidPath is the error code of a path that names no file or
// endpoint plainly.
const codeInvalidPath = "invalid_path"

// Shutdown stops accepting executions (new ones get 503), waits for the
// running ones to finish and store their state, and returns. If ctx ends
// first, the running executions are cancelled: their sessions keep the
// state stored before the call, and Shutdown returns ctx's error once they
// have stopped. It also closes the pool of warm interpreters. Call it
// together with http.Server.Shutdown.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.draining = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		h.stop()
		h.closePool()
		return nil
	case <-ctx.Done():
		h.stop()
		select {
		case <-done:
		case <-time.After(shutdownGrace):
			// Cancelled executions that do not stop in time are left to
			// the process's exit; their sessions keep their stored state.
			return fmt.Errorf("httpapi: shutdown: running executions were cancelled and %d did not stop within %v: %w", h.running.Load(), shutdownGrace, ctx.Err())
		}
		h.closePool()
		return fmt.Errorf("httpapi: shutdown: running executions were cancelled: %w", ctx.Err())
	}
}

// warmPool returns the pool of warm interpreters (nil when Warm is
// negative or the engine cannot start; opening a session then reports it).
func (h *Handler) warmPool(ctx context.Context) *runtime.Pool {
	if h.opts.Warm < 0 {
		return nil
	}
	h.poolOnce.Do(func() {
		eng := h.opts.Session.Engine
		if eng == nil {
			var err error
			// Not this request's cancellation: the pool serves all.
			if eng, err = runtime.Default(context.WithoutCancel(ctx)); err != nil {
				return
			}
		}
		h.pool = runtime.NewPool(eng, cmp.Or(h.opts.Warm, 2))
	})
	return h.pool
}

// closePool stops the warm pool; none starts afterwards.
func (h *Handler) closePool() {
	h.poolOnce.Do(func() {})
	if h.pool != nil {
		h.pool.Close(context.Background())
	}
}

// withSlot does work holding an execution slot, or answers at once why
// there is none: the server is shutting down (503), or every slot is busy
// (429). Executions, state transfers and file transfers hold one, so that
// the memory they hold is bounded by the slots, and Shutdown waits for
// them.
func (h *Handler) withSlot(work func() *apiError) *apiError {
	h.mu.Lock()
	if h.draining {
		h.mu.Unlock()
		return &apiError{status: http.StatusServiceUnavailable, code: "shutting_down", msg: "the server is shutting down; retry on another instance"}
	}
	select {
	case h.slots <- struct{}{}:
	default:
		h.mu.Unlock()
		count(h.metrics.rejected)
		return &apiError{status: http.StatusTooManyRequests, code: "at_capacity", msg: fmt.Sprintf("all %d execution slots are busy; retry shortly", cap(h.slots)), retryAfter: 1}
	}
	h.inflight.Add(1)
	h.mu.Unlock()
	h.running.Add(1)
	defer func() {
		h.running.Add(-1)
		<-h.slots
		h.inflight.Done()
	}()
	return work()
}

// withRunSlot does work that runs code (an execution, a resume, a check)
// holding a slot (see withSlot), with a context that ends when the client
// goes away or the server stops its executions.
func (h *Handler) withRunSlot(r *http.Request, work func(ctx context.Context) *apiError) *apiError {
	return h.withSlot(func() *apiError {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(h.base, cancel)
		defer stop()
		return work(ctx)
	})
}

// ErrorResponse is the body of every error answer: {"error": code,
// "message": what happened and what to do}. A 422 answer to POST /exec,
// whose code ran into a limit, also carries what the call produced before
// it was stopped (the other fields); they are absent from other errors.
type ErrorResponse struct {
	// Error is the machine-readable code: for a limit, the
	// runtime.LimitKind's String ("time_limit", "memory_limit", ...).
	Error string `json:"error"`
	// Message says what happened and what to do about it.
	Message string `json:"message"`
	// SessionID is the session the code ran in; its stored state is the
	// one from before the call (HasState, StateSize, StateHash).
	SessionID string `json:"session_id,omitempty"`
	// Stdout and Stderr are what the code printed before it was stopped
	// (Stderr ends with the traceback, when there is one).
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// Exception is the Python exception the limit raised, when it raised
	// one (time, memory, recursion, output and integer size limits).
	Exception  *PythonError `json:"exception,omitempty"`
	HasState   bool         `json:"has_state,omitempty"`
	StateSize  int64        `json:"state_size,omitempty"`
	StateHash  string       `json:"state_hash,omitempty"`
	DurationMS float64      `json:"duration_ms,omitempty"`
	// Diagnostics are the problems a type check found (error
	// "type_check_failed"; Message then holds them as text).
	Diagnostics []typecheck.Diagnostic `json:"diagnostics,omitempty"`
}

// apiError is an error response: {"error": code, "message": msg}, plus
// body's other fields when it is set.
type apiError struct {
	status     int
	code       string
	msg        string
	retryAfter int
	body       *ErrorResponse
	// detail is logged, never sent: what the client must not see (host
	// paths, store ids, the store's own wording).
	detail string
}

// Error makes an answer an error, for the paths that return answers as
// errors (a request the opened session refuses).
func (e *apiError) Error() string { return e.code + ": " + e.msg }

// named replaces the store id of session id (of namespace ns) in e's
// message with id, and returns e: a message that quotes a session's or
// the store's error names the session as the client does, never by its
// store id, which holds the namespace derived from the API key.
func (e *apiError) named(ns, id string) *apiError {
	e.msg = strings.ReplaceAll(e.msg, storeID(ns, id), id)
	return e
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) *apiError

// route registers an endpoint that needs an API key.
func (h *Handler) route(pattern, name string, f func(w http.ResponseWriter, r *http.Request, ns string) *apiError) {
	h.mux.HandleFunc(pattern, h.instrument(name, func(w http.ResponseWriter, r *http.Request) *apiError {
		ns, ok := h.namespace(r.Header.Get("x-api-key"))
		if !ok {
			return h.authFailed(w, r)
		}
		return f(w, r, ns)
	}))
}

// authFailed is the answer to a request with a missing or unknown key:
// 401, or 429 once its address failed too often (Options.AuthGuard).
func (h *Handler) authFailed(w http.ResponseWriter, r *http.Request) *apiError {
	client := h.guard.Client(r)
	if d := h.guard.Failed(client); d > 0 {
		w.Header().Set("Retry-After", apikey.RetryAfter(d))
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "authentication failures over the limit; refusing", slog.String("client", client))
		return &apiError{status: http.StatusTooManyRequests, code: "too_many_auth_failures", msg: "too many requests with a missing or unknown API key from this address; wait for Retry-After, then send a valid x-api-key"}
	}
	return &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: "missing or unknown x-api-key header"}
}

// namespace returns the store id prefix of an API key (see package apikey).
func (h *Handler) namespace(key string) (string, bool) { return h.keys.Namespace(key) }

// statusWriter records the status for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// instrument adds error responses, a log record and request metrics.
func (h *Handler) instrument(name string, f handlerFunc) http.HandlerFunc {
	h.metrics.endpoint(name)
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		span := trace.SpanFromContext(r.Context())
		if i := strings.IndexByte(r.Pattern, '/'); i >= 0 && span.IsRecording() {
			// otelhttp names the span after the pattern once the handler
			// returns; the route attribute is ours to set.
			span.SetAttributes(semconvRoute.String(r.Pattern[i:]))
		}
		sw := &statusWriter{ResponseWriter: w}
		aerr := f(sw, r)
		if aerr != nil {
			writeError(sw, aerr)
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		elapsed := time.Since(start)
		h.metrics.request(name, sw.status)
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", sw.status),
			slog.Int64("bytes", sw.bytes), slog.Duration("duration", elapsed), slog.String("remote", r.RemoteAddr),
		}
		level := slog.LevelInfo
		if aerr != nil {
			attrs = append(attrs, slog.String("error", aerr.code), slog.String("message", aerr.msg))
			if aerr.detail != "" {
				attrs = append(attrs, slog.String("detail", aerr.detail))
			}
			if aerr.status >= 500 {
				level = slog.LevelError
			} else {
				level = slog.LevelWarn
			}
		}
		if sc := span.SpanContext(); sc.IsValid() && span.IsRecording() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
		h.log.LogAttrs(r.Context(), level, "request", attrs...)
	}
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.retryAfter))
	}
	body := ErrorResponse{}
	if e.body != nil {
		body = *e.body
	}
	body.Error, body.Message = e.code, e.msg
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// storeError maps a store or session failure to a response. Failures the
// code or the request caused (limits) are mapped by limitError first.
func storeError(err error) *apiError {
	var cse *session.CorruptStateError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: "state_not_found", msg: "no state is stored for this session"}
	case errors.Is(err, store.ErrConflict):
		return &apiError{status: http.StatusConflict, code: "conflict", detail: err.Error(),
			msg: "another request updated this session at the same time; this call's changes were not saved"}
	case errors.As(err, &cse):
		return corruptStateError(cse)
	case errors.Is(err, session.ErrCorrupt), errors.Is(err, store.ErrUnreadable):
		// Damage to this session's entry (checked before ErrUnavailable,
		// which store.ErrUnreadable errors match too): not an outage.
		return &apiError{status: http.StatusInternalServerError, code: codeStateCorrupt, detail: err.Error(),
			msg: "the stored state of this session is damaged and cannot be read; DELETE /state/{id} removes it (the next execution of the session then starts empty)"}
	case errors.Is(err, store.ErrUnavailable):
		// The store's error names its host, paths and keys: the log has it.
		return &apiError{status: http.StatusServiceUnavailable, code: "store_unavailable", detail: err.Error(), retryAfter: 1,
			msg: "the session store cannot be reached or did not answer in time; a change this request made may or may not be stored: retry shortly, with the same Idempotency-Key to get its answer without applying it twice (the server's log has the detail)"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, runtime.ErrCancelled):
		return &apiError{status: http.StatusServiceUnavailable, code: "cancelled", msg: "the request was cancelled (client gone or server shutting down); the session keeps its state from before the call"}
	case errors.Is(err, errMountsUnavailable):
		return &apiError{status: http.StatusInternalServerError, code: "internal", msg: err.Error()}
	}
	return &apiError{status: http.StatusInternalServerError, code: "internal", detail: err.Error(),
		msg: "the server failed to serve this request (a fault of the server, not of the request); its log has the detail"}
}
