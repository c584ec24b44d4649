//go:build !monty_lean

package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/storeurl"
	"github.com/monty-go/monty/session/store/tiered"
	"github.com/monty-go/monty/session/telemetry/scrape"
)

// serveLimits are monty serve's limit flags: the HTTP API's defaults.
var serveLimits = limitProfile{defaults: httpapi.DefaultLimits(), service: true, host: true}

const serveUsage = `usage: monty serve [flags]

Serves the HTTP API (docs/http.md): GET / (liveness: what this binary is,
answered while draining too), POST /exec, POST /runs/{run_id}/resume,
GET|POST|DELETE /state/{id}, GET /state/{id}/info, GET|PUT|DELETE
/state/{id}/files[/PATH], GET /healthz, GET /health, GET /health/store,
GET /metrics. Every flag can also be set with the environment variable named
in brackets; a flag wins over its variable. The --max-* limits bound every
execution: a request may ask for less, never for more. The --state-* flags
are seed 004's STATE_* settings (docs/service.md maps them). The --connect
MCP servers are the operator's: every client's code may call their tools.
At ws://HOST:PORT/ it also serves monty.v1, the protocol of upstream Monty's
Python client (pydantic_monty.AsyncMontyWebsocket), with stored sessions,
--profiles, and the same keys, store and limits (docs/protocol.md).
SIGINT or SIGTERM stops accepting work, lets running executions finish (up to
--shutdown-timeout), hands each monty.v1 session back at its next request
(stored, for another instance to continue) and exits.

` + telemetryUsage + `
flags:
`

// serveFlags maps flag names to the environment variables that set them.
var serveEnv = map[string]string{
	"addr":                "MONTY_ADDR",
	"store":               "MONTY_STORE",
	"api-key-file":        "MONTY_API_KEY_FILE",
	"signing-key-file":    "MONTY_SIGNING_KEY_FILE",
	"max-duration":        "MONTY_MAX_DURATION",
	"max-memory":          "MONTY_MAX_MEMORY",
	"max-recursion":       "MONTY_MAX_RECURSION",
	"max-int-bits":        "MONTY_MAX_INT_BITS",
	"max-host-calls":      "MONTY_MAX_HOST_CALLS",
	"max-output":          "MONTY_MAX_OUTPUT",
	"max-result":          "MONTY_MAX_RESULT",
	"max-state-size":      "MONTY_MAX_STATE_SIZE",
	"max-files-size":      "MONTY_MAX_FILES_SIZE",
	"max-body":            "MONTY_MAX_BODY",
	"concurrency":         "MONTY_CONCURRENCY",
	"hot-sessions":        "MONTY_HOT_SESSIONS",
	"trust-forwarded-for": "MONTY_TRUST_FORWARDED_FOR",
	"shutdown-timeout":    "MONTY_SHUTDOWN_TIMEOUT",
	"tls-cert":            "MONTY_TLS_CERT",
	"tls-key":             "MONTY_TLS_KEY",
	"log-format":          "MONTY_LOG_FORMAT",
	"log-level":           "MONTY_LOG_LEVEL",
	"cache-dir":           runtime.CacheDirEnv,
	// Seed 004's state settings (docs/service.md).
	"state-persistence":      "MONTY_STATE_PERSISTENCE",
	"state-capture-on-error": "MONTY_STATE_CAPTURE_ON_ERROR",
	"state-ttl":              "MONTY_STATE_TTL",
	"state-archive-after":    "MONTY_STATE_ARCHIVE_AFTER",
	"state-archive-ttl":      "MONTY_STATE_ARCHIVE_TTL",
	"state-archive-interval": "MONTY_STATE_ARCHIVE_INTERVAL",
	"on-corrupt-state":       "MONTY_ON_CORRUPT_STATE",
	"health-timeout":         "MONTY_HEALTH_TIMEOUT",
	"run-ttl":                "MONTY_RUN_TTL",
	"claim-lease":            "MONTY_CLAIM_LEASE",
}

// serveConfig is what the flags say.
type serveConfig struct {
	addr, store, apiKeyFile, signingKeyFile string
	apiKeys                                 []string
	shutdownTimeout                         time.Duration
	limits                                  *limitFlags
	maxState, maxBody, maxFiles             string
	concurrency                             int
	hotSessions                             int
	trustForwardedFor                       bool
	tlsCert, tlsKey                         string
	logFormat, logLevel, cacheDir           string
	stubsFile                               string
	mounts                                  *mountFlags
	connect                                 *connectFlags
	// Seed 004's state settings.
	noPersistence, captureOnError bool
	stateTTL, archiveAfter        string
	archiveTTL, archiveInterval   string
	onCorrupt                     func() (bool, error)
	healthTimeout                 time.Duration
	claimLease                    time.Duration
	runTTL                        time.Duration
	console                       string
	ws                            *wsFlags
}

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c serveConfig
	fs := flag.NewFlagSet("monty serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.VisitAll(func(f *flag.Flag) {
			if env := serveEnv[f.Name]; env != "" {
				f.Usage += " [" + env + "]"
			}
		})
		fs.PrintDefaults()
	}
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one)")
	fs.StringVar(&c.store, "store", "", "the session store `SPEC`: "+storeFlagHelp)
	fs.Func("api-key", "accept this API `KEY` in x-api-key, or NAME=KEY to name it in the audit of approvals (repeatable; each key has its own sessions) [MONTY_API_KEYS, comma-separated]", func(s string) error {
		c.apiKeys = append(c.apiKeys, s)
		return nil
	})
	fs.StringVar(&c.apiKeyFile, "api-key-file", "", "read API keys from `FILE`, one per line, KEY or NAME=KEY (# comments)")
	fs.StringVar(&c.signingKeyFile, "signing-key-file", "", "read the state signing key from `FILE` (at least 16 bytes; or set MONTY_SIGNING_KEY)")
	// Requests may ask for less than these limits, never for more.
	c.limits = addLimitFlags(fs, serveLimits)
	fs.StringVar(&c.maxState, "max-state-size", "50MiB", "largest stored or uploaded session state")
	fs.StringVar(&c.maxFiles, "max-files-size", "16MiB", "most bytes of files each session keeps at /work, saved with its state (0: no /work)")
	fs.StringVar(&c.maxBody, "max-body", "1MiB", "largest POST /exec body")
	fs.IntVar(&c.concurrency, "concurrency", 0, "executions, state uploads and downloads in progress at once; more get 429 (0: 2 per CPU)")
	fs.IntVar(&c.hotSessions, "hot-sessions", 0, "sessions kept open between requests, so a continued session does not load its state again (0: 64, -1: none; each holds an interpreter)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long running executions may take before they are cancelled")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `FILE` (with --tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "the TLS private key `FILE`")
	fs.StringVar(&c.logFormat, "log-format", "text", "log records as text or json, to stderr")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.cacheDir, "cache-dir", "", "cache compiled machine code in `DIR` (default "+defaultCacheHint+"; off: none)")
	fs.StringVar(&c.stubsFile, "stubs", "", "stub (.pyi) `FILE` added to every type check (POST /check, \"type_check\" on /exec): names the sandbox provides")
	c.mounts = addMountFlags(fs)
	c.connect = addConnectFlags(fs)
	fs.Var((*negatedBool)(&c.noPersistence), "state-persistence", "keep session state between executions (false: every execution starts empty and nothing is stored) (default true)")
	fs.BoolVar(&c.trustForwardedFor, "trust-forwarded-for", false, "count failed API key checks by the first address of X-Forwarded-For, as a proxy in front sets it (only behind one: a client could name any address); by default the connection's address counts")
	fs.BoolVar(&c.captureOnError, "state-capture-on-error", false, "store the state an execution leaves when its code raises (default: such an execution leaves the session as it was)")
	fs.StringVar(&c.stateTTL, "state-ttl", "", "how long a session's state lives after its last write, in the store or a HOT,COLD pair's HOT store: a `DURATION` like 2h, seconds, or never (default: the store's: 2h in Redis, 7d in S3, never in a directory)")
	fs.StringVar(&c.archiveAfter, "state-archive-after", "", "with --store HOT,COLD: copy state into COLD after this `DURATION` without a write (default 30m)")
	fs.StringVar(&c.archiveTTL, "state-archive-ttl", "", "with --store HOT,COLD: how long archived state lives in COLD, a `DURATION` like 7d, or never (default: the COLD store's)")
	fs.StringVar(&c.archiveInterval, "state-archive-interval", "", "with --store HOT,COLD: time between archiver passes, a `DURATION` (default 1m)")
	c.onCorrupt = corruptFlag(fs, "a session", "in the answer's state_warning and the log")
	fs.DurationVar(&c.healthTimeout, "health-timeout", httpapi.DefaultHealthTimeout, "longest store round trip of GET /health/store")
	fs.DurationVar(&c.claimLease, "claim-lease", 0, "how long a resume's claim of a paused run holds while it makes the approved calls; one not done by then is taken to have died, and its calls are listed again as may have run (default: the request's time limit for each approved call and for the run, plus 30s)")
	fs.DurationVar(&c.runTTL, "run-ttl", session.DefaultRunTTL, "how long a run paused at client tool calls waits for POST /runs/{run_id}/resume")
	fs.StringVar(&c.console, "console", "on", "serve the operator console at /ui (sign-in with an API key): on, or off to remove it")
	c.ws = addWSFlags(fs)
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "monty serve: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	if err := applyEnv(fs); err != nil {
		fmt.Fprintln(stderr, "monty serve:", err)
		return ExitUsage
	}
	if err := serve(ctx, c, stderr); err != nil {
		fmt.Fprintln(stderr, "monty serve:", err)
		var u usageError
		if errors.As(err, &u) {
			return ExitUsage
		}
		return ExitException
	}
	return ExitOK
}

// applyEnv sets the flags not given on the command line from serveEnv.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, env := range serveEnv {
		v, ok := os.LookupEnv(env)
		if !ok || given[name] {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("%s=%q: %v", env, v, err)
		}
	}
	return nil
}

// options turns the configuration into handler options (without Store and Engine).
func (c serveConfig) options() (httpapi.Options, error) {
	var o httpapi.Options
	var err error
	if o.Session.SigningKey, err = signingKey(c.signingKeyFile); err != nil {
		return o, usageError{err}
	}
	entries, err := apiKeys(c.apiKeys, c.apiKeyFile)
	if err != nil {
		return o, usageError{err}
	}
	o.APIKeys, o.KeyNames = namedKeys(entries)
	if c.concurrency < 0 {
		return o, usageError{errors.New("--concurrency must not be negative")}
	}
	if o.Session.Limits, err = c.limits.limits(); err != nil {
		return o, usageError{err}
	}
	sizes := []struct {
		flag string
		val  string
		dst  *int64
	}{{"max-state-size", c.maxState, &o.Session.MaxStateSize}, {"max-body", c.maxBody, &o.MaxBody}, {"max-files-size", c.maxFiles, &o.MaxFileBytes}}
	for _, s := range sizes {
		if *s.dst, err = parseBytes(s.val); err != nil {
			return o, usageError{fmt.Errorf("--%s: %v", s.flag, err)}
		}
		if *s.dst < 0 || *s.dst > 1<<50 {
			return o, usageError{fmt.Errorf("--%s: %q is too large", s.flag, s.val)}
		}
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = -1 // no /work
	}
	o.MaxConcurrent = c.concurrency
	if c.hotSessions < -1 {
		return o, usageError{errors.New("--hot-sessions must be -1 (none), 0 (the default) or more")}
	}
	if c.onCorrupt != nil {
		if o.FailOnCorruptState, err = c.onCorrupt(); err != nil {
			return o, usageError{err}
		}
	}
	o.Session.CaptureOnError, o.Session.Ephemeral = c.captureOnError, c.noPersistence
	if c.healthTimeout < 0 {
		return o, usageError{errors.New("--health-timeout must not be negative")}
	}
	o.HealthTimeout = c.healthTimeout
	if c.claimLease < 0 {
		return o, usageError{errors.New("--claim-lease must not be negative (0: the default)")}
	}
	o.ClaimLease = c.claimLease
	if c.runTTL < 0 {
		return o, usageError{errors.New("--run-ttl must not be negative (0: the default, 1h)")}
	}
	o.RunTTL = c.runTTL
	switch c.console {
	case "on", "": // "": a configuration made in Go, without the flag
	case "off":
		o.DisableConsole = true
	default:
		return o, usageError{fmt.Errorf("--console: %q: want on or off", c.console)}
	}
	return o, nil
}

// negatedBool is a boolean flag stored negated, so that the zero value of
// the variable is the flag's default, true.
type negatedBool bool

func (b *negatedBool) String() string {
	if b == nil {
		return "true"
	}
	return strconv.FormatBool(!bool(*b))
}

func (b *negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*b = negatedBool(!v)
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (b *negatedBool) IsBoolFlag() bool { return true }

// storeOptions are the store settings of the --state-* flags.
func (c serveConfig) storeOptions() (storeurl.Options, error) {
	var o storeurl.Options
	var err error
	for _, d := range []struct {
		flag, val string
		never     bool
		dst       *time.Duration
	}{
		{"state-ttl", c.stateTTL, true, &o.TTL},
		{"state-archive-ttl", c.archiveTTL, true, &o.ArchiveTTL},
		{"state-archive-after", c.archiveAfter, false, &o.ArchiveAfter},
		{"state-archive-interval", c.archiveInterval, false, &o.ArchiveInterval},
	} {
		if *d.dst, err = parseStateDuration(d.val, d.never); err != nil {
			return o, usageError{fmt.Errorf("--%s: %v", d.flag, err)}
		}
	}
	return o, nil
}

// parseStateDuration reads a --state-* duration: a Go duration (90s, 2h),
// days (7d), or bare seconds as seed 004's variables give them (7200);
// "never" (or 0, when never is allowed) is negative; empty is 0 (the
// store's default).
func parseStateDuration(s string, never bool) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return 0, nil
	case never && (s == "never" || s == "0"):
		return -1, nil
	}
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < 1<<33 {
		d = time.Duration(n) * time.Second
	} else if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || !(n > 0) || n > 1e5 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		d = time.Duration(n * float64(24*time.Hour))
	} else if d, err = time.ParseDuration(s); err != nil {
		d = 0
	}
	if d <= 0 {
		hint := ""
		if never {
			hint = ", or never"
		}
		return 0, fmt.Errorf("%q: want a positive duration such as 90s, 2h or 7d, or seconds%s", s, hint)
	}
	return d, nil
}

// describeStore names the kind of store and the settings given to it, for
// the log (never a URL: it may hold a password).
func describeStore(st store.Store, o storeurl.Options) string {
	kind, _, _ := strings.Cut(strings.TrimPrefix(fmt.Sprintf("%T", st), "*"), ".") // "dirstore", "tiered", ...
	var b strings.Builder
	b.WriteString(kind)
	for _, s := range []struct {
		name string
		d    time.Duration
	}{{"ttl", o.TTL}, {"archive_ttl", o.ArchiveTTL}, {"archive_after", o.ArchiveAfter}, {"archive_interval", o.ArchiveInterval}} {
		switch {
		case s.d < 0:
			fmt.Fprintf(&b, " %s=never", s.name)
		case s.d > 0:
			fmt.Fprintf(&b, " %s=%s", s.name, s.d)
		}
	}
	return b.String()
}

// mountList describes the mounts for a log record.
func mountList(specs []vfs.MountSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.String())
	}
	return out
}

// signingKey reads the key from file or MONTY_SIGNING_KEY.
func signingKey(file string) ([]byte, error) {
	var key []byte
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		key = []byte(strings.TrimSpace(string(b)))
	} else {
		key = []byte(os.Getenv("MONTY_SIGNING_KEY"))
	}
	if len(key) < httpapi.MinSigningKey {
		return nil, fmt.Errorf("a signing key of at least %d bytes is required (state blobs are signed so that uploads can be trusted): set MONTY_SIGNING_KEY or --signing-key-file, e.g. from `head -c 32 /dev/urandom | base64`; every instance sharing a store needs the same key", httpapi.MinSigningKey)
	}
	return key, nil
}

// apiKeys collects keys from flags, MONTY_API_KEYS and a file.
func apiKeys(flags []string, file string) ([]string, error) {
	keys := append([]string(nil), flags...)
	if len(flags) == 0 {
		for _, k := range strings.Split(os.Getenv("MONTY_API_KEYS"), ",") {
			if k = strings.TrimSpace(k); k != "" {
				keys = append(keys, k)
			}
		}
	}
	if file != "" {
		more, err := apiKeyFile(file)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
	}
	return keys, checkAPIKeys(keys)
}

// apiKeyFile reads the keys of file: one a line, # comments.
func apiKeyFile(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("API keys: %w", err)
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" && !strings.HasPrefix(k, "#") {
			keys = append(keys, k)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("API keys: %s: %w", file, err)
	}
	return keys, nil
}

// keyName is a name an API key entry may start with ("NAME=KEY").
var keyName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.@-]{0,63}$`)

// namedKeys splits API key entries into the keys and their names: an
// entry "NAME=KEY" names KEY when NAME is a name (a letter, then up to 63
// letters, digits and "_.@-") and KEY has at least 8 characters; any
// other entry is a key as it is (so a base64 key ending in "=" stays
// whole).
func namedKeys(entries []string) ([]string, map[string]string) {
	keys := make([]string, 0, len(entries))
	var names map[string]string
	for _, e := range entries {
		name, key, ok := strings.Cut(e, "=")
		if !ok || !keyName.MatchString(name) || len(key) < 8 {
			keys = append(keys, e)
			continue
		}
		if names == nil {
			names = map[string]string{}
		}
		keys, names[key] = append(keys, key), name
	}
	return keys, names
}

// checkAPIKeys refuses keys shorter than 8 characters.
func checkAPIKeys(keys []string) error {
	for _, k := range keys {
		if len(k) < 8 {
			return fmt.Errorf("API key %q... is shorter than 8 characters", k[:min(len(k), 2)])
		}
	}
	return nil
}

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", level)}
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: use text or json", format)}
}

// serve runs the server until ctx ends or a signal arrives.
func serve(ctx context.Context, c serveConfig, stderr io.Writer) error {
	log, err := newLogger(c.logFormat, c.logLevel, stderr)
	if err != nil {
		return err
	}
	b := &service{c: c, log: log}
	defer b.close()
	if ctx, err = b.build(ctx); err != nil {
		return err
	}
	return b.run(ctx)
}

// service is what serve builds and runs: the HTTP API and the monty.v1
// server over one store, engine, checker and set of MCP servers, and what
// closes them, last opened first closed. It is not safe for concurrent
// use.
type service struct {
	c         serveConfig
	log       *slog.Logger
	opts      httpapi.Options
	storeOpts storeurl.Options
	h         *httpapi.Handler
	ws        *server.Server
	wsOpts    server.Options
	defaults  server.Profile // of a monty.v1 session that names no profile
	profiles  int
	closers   []func()
}

// close closes what build opened, in reverse.
func (b *service) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// build checks the flags and opens what the servers need, in the order
// that fails fastest; the context it returns ends at SIGINT or SIGTERM.
func (b *service) build(ctx context.Context) (context.Context, error) {
	c, log := b.c, b.log
	opts, err := c.options()
	if err != nil {
		return ctx, err
	}
	// First, so that the last spans are flushed after everything else
	// has stopped.
	scraped, metrics, err := scrape.New()
	if err != nil {
		return ctx, err
	}
	tel, stopTelemetry, err := startTelemetry(ctx, log, scraped)
	if err != nil {
		return ctx, usageError{err}
	}
	b.closers = append(b.closers, stopTelemetry)
	if opts.Session.Telemetry = tel.Telemetry; opts.Session.Telemetry != nil {
		// GET /metrics serves every instrument, OTLP or not (without the
		// SDK, OTEL_SDK_DISABLED, the API keeps metrics of its own).
		opts.Metrics = metrics
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return ctx, usageError{errors.New("--tls-cert and --tls-key go together")}
	}
	// Only the operator names host directories: clients see the guest
	// paths. Opened here to refuse a bad spec at start; every request then
	// opens its own (an overlay's writes are that request's alone). Each
	// session's own files are at /work (session.FilesMount), in front of
	// the mounts.
	mounts, err := c.mounts.open()
	if err == nil && opts.MaxFileBytes >= 0 {
		err = refuseFilesMount(mounts)
	}
	if mounts != nil {
		opts.Mounts = mounts.Specs()
		mounts.Close()
	}
	if err != nil {
		return ctx, usageError{err}
	}
	conns, err := c.connect.servers()
	if err != nil {
		return ctx, usageError{err}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	b.closers = append(b.closers, stop)
	b.opts = opts
	if err := b.openBackends(ctx, conns); err != nil {
		return ctx, err
	}
	return ctx, b.newHandlers(ctx)
}

// openBackends opens the store (before the engine: a wrong spec fails at
// once), the operator's MCP servers (every client's code may call them),
// the engine and the type checker.
func (b *service) openBackends(ctx context.Context, conns []*mcpConnection) error {
	c, log := b.c, b.log
	storeOpts, err := c.storeOptions()
	if err != nil {
		return err
	}
	storeOpts.Logf = func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...), "component", "archiver") }
	st, err := openStoreWith(ctx, c.store, storeOpts)
	if err != nil {
		if storeExit(err) == ExitUsage {
			return usageError{err}
		}
		return err
	}
	b.closers = append(b.closers, func() { st.Close() })
	b.storeOpts = storeOpts
	if ts, ok := st.(*tiered.Store); ok && storeOpts.TTL > 0 {
		if after, interval := ts.ArchiveAfter(); after+interval >= storeOpts.TTL {
			log.Warn("--state-ttl is not longer than --state-archive-after plus --state-archive-interval: state can expire from the hot store before it is archived",
				"state_ttl", storeOpts.TTL, "archive_after", after, "archive_interval", interval)
		}
	}
	// Closed after the handlers' executions are done.
	mcp, err := c.connect.connect(ctx, conns, log)
	if err != nil {
		return err
	}
	b.closers = append(b.closers, mcp.Close)
	engine, err := serviceEngine(ctx, c.cacheDir, log)
	if err != nil {
		return err
	}
	b.closers = append(b.closers, func() { engine.Close(context.Background()) })
	stubs, err := readStubs(c.stubsFile)
	if err != nil {
		return usageError{err}
	}
	o := &b.opts
	o.Session.Store, o.Session.Engine, o.Logger, o.Functions, o.Stubs = st, engine, log, mcp.reg, mcp.stubs(stubs)
	// The type checker is compiled at the first request that asks for a
	// check, into the same cache as the interpreter.
	checkerOpts := []typecheck.Option{typecheck.WithLogger(log)}
	switch {
	case strings.EqualFold(c.cacheDir, runtime.CacheOff):
		checkerOpts = append(checkerOpts, typecheck.WithCacheDir(""))
	case c.cacheDir != "":
		checkerOpts = append(checkerOpts, typecheck.WithCacheDir(c.cacheDir))
	}
	o.Checker = typecheck.Lazy(checkerOpts...)
	b.closers = append(b.closers, func() { o.Checker.Close(context.Background()) })
	// One keeper of live sessions for both surfaces: a session is one
	// caller's at a time, whichever surface it came through. Closed after
	// the handlers (its sessions' interpreters are the API's pool's).
	keep := b.c.hotSessions // 0: the keeper's default, -1: none
	if o.Session.Ephemeral {
		keep = -1
	}
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{MaxLive: keep, IdleTimeout: 5 * time.Minute, Warm: -1})
	b.closers = append(b.closers, keeper.Close)
	o.Keeper = keeper
	// One count of failed API key checks for the API, its console and
	// monty.v1.
	o.AuthGuard = apikey.NewGuard(apikey.GuardOptions{TrustForwardedFor: b.c.trustForwardedFor})
	// A monty.v1 session that names no profile gets serve's own flags.
	b.defaults = server.Profile{Limits: o.Session.Limits, Mounts: o.Mounts, Host: mcp.host(), Tools: mcp.reg}
	return nil
}

// newHandlers makes the HTTP API and the monty.v1 server, with the
// profiles of --profiles.
func (b *service) newHandlers(ctx context.Context) error {
	c, opts := b.c, b.opts
	h, err := httpapi.New(opts)
	if err != nil {
		return err
	}
	b.h = h
	wsOpts, err := c.ws.options()
	if err != nil {
		return err
	}
	specs, err := readProfiles(c.ws.profilesFile)
	if err != nil {
		return usageError{err}
	}
	profiles, closeProfiles, err := wsProfiles(ctx, specs, b.defaults, c.connect.timeout, b.log)
	if err != nil {
		return err
	}
	b.closers = append(b.closers, closeProfiles)
	b.profiles = len(profiles) - 1
	wsOpts.Engine, wsOpts.APIKeys, wsOpts.Profiles = opts.Session.Engine, opts.APIKeys, profiles
	wsOpts.Checker, wsOpts.Telemetry, wsOpts.Logger, wsOpts.Guard = opts.Checker, opts.Session.Telemetry, b.log, opts.AuthGuard
	if !opts.Session.Ephemeral {
		wsOpts.Store, wsOpts.SigningKey, wsOpts.MaxStateSize, wsOpts.Keeper = opts.Session.Store, opts.Session.SigningKey, opts.Session.MaxStateSize, opts.Keeper
	}
	if b.ws, err = server.New(ctx, wsOpts); err != nil {
		return err
	}
	b.wsOpts = wsOpts
	return nil
}

// handler routes a request: a WebSocket upgrade to monty.v1, GET / to
// the about page, the rest to the HTTP API.
func (b *service) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case server.IsUpgrade(r):
			b.ws.ServeHTTP(w, r)
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			serveAbout(w, b.h.Draining())
		default:
			b.h.ServeHTTP(w, r)
		}
	})
}

// run listens, serves until ctx ends, then drains.
func (b *service) run(ctx context.Context) error {
	c, log := b.c, b.log
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return usageError{fmt.Errorf("--addr: %w", err)}
	}
	srv := &http.Server{
		Handler:           b.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if c.tlsCert != "" {
		scheme = "https"
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	b.logStart(scheme, ln.Addr().String())
	served := make(chan error, 1)
	go func() {
		if c.tlsCert != "" {
			served <- srv.ServeTLS(ln, c.tlsCert, c.tlsKey)
		} else {
			served <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	b.shutdown(srv)
	return nil
}

// logStart says what is served where, and warns of what is open.
func (b *service) logStart(scheme, addr string) {
	log, opts, wsOpts := b.log, b.opts, b.wsOpts
	if len(opts.APIKeys) == 0 {
		log.Warn("no API keys configured: every client can use every session (set --api-key, MONTY_API_KEYS or --api-key-file)")
	}
	if opts.Session.Ephemeral {
		log.Warn("state persistence is off (--state-persistence=false): every execution starts empty and nothing is stored")
	}
	onCorrupt := corruptFresh
	if opts.FailOnCorruptState {
		onCorrupt = corruptFail
	}
	log.Info("session state", "persistence", !opts.Session.Ephemeral, "capture_on_error", opts.Session.CaptureOnError, "max_state_size", opts.Session.MaxStateSize,
		"on_corrupt_state", onCorrupt, "store", describeStore(opts.Session.Store, b.storeOpts))
	log.Info("monty.v1 WebSocket sessions", "url", strings.Replace(scheme, "http", "ws", 1)+"://"+addr+"/",
		"stored", wsOpts.Store != nil, "profiles", b.profiles, "max_conns", wsOpts.MaxConns, "max_conns_per_key", wsOpts.MaxConnsPerKey,
		"idle_timeout", wsOpts.IdleTimeout, "turn_timeout", wsOpts.TurnTimeout, "park_only", wsOpts.ParkOnly)
	// Which entries were read as NAME=KEY: an entry of that shape is a
	// named key, so the operator sees it was not taken whole.
	keyNames := slices.Sorted(maps.Values(opts.KeyNames))
	log.Info("listening", "addr", addr, "url", scheme+"://"+addr, "api_keys", len(opts.APIKeys), "key_names", keyNames,
		"concurrency", b.h.Capacity(), "max_duration", opts.Session.Limits.MaxDuration, "max_memory", opts.Session.Limits.MaxMemory, "max_result", b.h.Limits().MaxResult,
		"mounts", mountList(opts.Mounts), "max_files_size", opts.MaxFileBytes)
	if !opts.DisableConsole {
		log.Info("operator console", "url", scheme+"://"+addr+"/ui/", "open", len(opts.APIKeys) == 0)
	}
}

// shutdown drains both servers within --shutdown-timeout. The listener
// stays open while the handlers drain, so that GET /health answers 503
// and new work is refused with a reason rather than a refused connection.
func (b *service) shutdown(srv *http.Server) {
	log := b.log
	log.Info("shutting down", "timeout", b.c.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), b.c.shutdownTimeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- b.h.Shutdown(sctx) }()
	if err := b.ws.Shutdown(sctx); err != nil {
		log.Warn("monty.v1 sessions still connected at the shutdown timeout were parked and closed", "error", err)
	}
	herr := <-drained
	serr := srv.Shutdown(sctx)
	if herr != nil {
		log.Warn("executions cancelled at shutdown; their sessions keep the state stored before the call", "error", herr)
	}
	if serr != nil {
		// Connections still open after the handler stopped: close them.
		_ = srv.Close()
	}
	log.Info("stopped")
}

// serviceEngine is the engine of serve and mcp: it answers its first
// request in about a second even when the machine code is not cached
// (fast start on wazero's interpreter engine), and logs how it started.
func serviceEngine(ctx context.Context, cacheDir string, log *slog.Logger) (*runtime.Engine, error) {
	opts := append(cacheOptions(cacheDir), runtime.WithFastStart(), runtime.WithLogger(log))
	engine, err := runtime.NewEngine(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the interpreter: %w", err)
	}
	info := engine.CompileInfo()
	log.Info("interpreter ready", "monty_version", engine.MontyVersion(), "took", info.Ready.Round(time.Millisecond),
		"cached", info.Cached, "fast_start", info.FastStart, "cache_dir", info.CacheDir)
	return engine, nil
}

// liveness is GET / of monty serve: what this binary is, and whether it
// is draining. It answers 200 while draining (a liveness probe must not
// restart a server finishing its work; GET /health is the readiness
// probe, 503 then) and needs no API key.
type liveness struct {
	buildAbout
	Status string `json:"status"`
}

func serveAbout(w http.ResponseWriter, draining bool) {
	out := liveness{buildAbout: about(), Status: "ok"}
	if draining {
		out.Status = "draining"
	}
	body, err := json.Marshal(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}
