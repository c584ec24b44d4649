// Package console is the operator console of `monty serve`: a small set of
// server-rendered pages at /ui (Go html/template, embedded, no build step,
// no external assets) that show the sessions of the signed-in API key's
// namespace, a session's JSON globals, files and paused run, the approvals
// waiting across the namespace (with Approve and Deny buttons that resume
// the run), a run box that streams the output of code run in a session,
// and the server's and store's health.
//
// The console does not touch the store or run code itself: a Backend (the
// HTTP API's Handler, see package httpapi) does, through the very code
// paths of its endpoints, so a decision made here is a POST
// /runs/{run_id}/resume and a run is a POST /exec.
//
// Security (see docs/security.md): sign-in exchanges an API key for a
// cookie that holds no key (the namespace, an expiry and a random nonce,
// HMAC-signed with a key derived from the server's signing key), HttpOnly,
// SameSite=Strict, Secure when the request came over TLS, Path=/ui. Every
// state-changing request carries a CSRF token derived from the cookie,
// checked in constant time, and a cross-origin Origin header is refused;
// both fail with 403. Session data is only ever rendered as text (escaped
// by html/template, or set as textContent by the script), and every page
// is sent with a Content-Security-Policy that allows no inline script,
// frame-ancestors 'none' and Cache-Control: no-store.
package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/monty-go/monty/session/apikey"
)

// Errors a Backend returns, for use with errors.Is.
var (
	// ErrNotFound: no such session, run or file in the namespace (it may
	// exist in another one: the console cannot tell, and says not found).
	ErrNotFound = errors.New("console: not found")
	// ErrConfig is wrapped by every error New returns for bad arguments.
	ErrConfig = errors.New("console: invalid configuration")
)

// Backend is what the console needs of the server it is mounted in. Its
// methods must be safe for concurrent use. ns is always a namespace that
// Namespace returned for a configured key (or the public one).
type Backend interface {
	// Namespace returns the namespace of an API key, false when the key
	// is not accepted. With no keys configured every key (even "") maps
	// to the public namespace.
	Namespace(key string) (ns string, ok bool)
	// KnownNamespace reports whether ns is still the namespace of an
	// accepted key (a cookie outlives a key that was removed).
	KnownNamespace(ns string) bool
	// Open reports whether the server has no API keys: everyone shares
	// the public namespace, as the API does.
	Open() bool
	// Sessions lists the sessions stored in namespace ns.
	Sessions(ctx context.Context, ns string) ([]SessionInfo, error)
	// Inspect reads a session's stored state without running it: its
	// globals and its paused run. ErrNotFound when none is stored.
	Inspect(ctx context.Context, ns, id string) (*State, error)
	// Files lists a session's files (nil when files are turned off).
	Files(ctx context.Context, ns, id string) ([]File, error)
	// ReadFile returns one of a session's files; ErrNotFound when absent.
	ReadFile(ctx context.Context, ns, id, name string) ([]byte, error)
	// Decide answers the approval calls of paused run runID (the API's
	// run_id) as POST /runs/{run_id}/resume does, with r's context: an
	// approved call is made by the server, a denied one raises
	// PermissionError in the code. It returns the run's outcome.
	Decide(r *http.Request, ns, runID string, decisions []Decision) Outcome
	// Exec serves a run of code in namespace ns as POST /exec does: r's
	// body is an /exec request body, and its Accept header may ask for
	// server-sent events.
	Exec(w http.ResponseWriter, r *http.Request, ns string)
	// Health reports the server's liveness and runs the store's check.
	Health(ctx context.Context) Health
}

// SessionInfo is a session in a list.
type SessionInfo struct {
	ID       string
	Size     int64
	Modified time.Time
	// Source is the backend holding it: "hot" or "archive" for a tiered
	// store, else the store's kind.
	Source string
}

// State is what a session's stored state says about itself.
type State struct {
	SessionInfo
	// Globals are the public global names; JSON the JSON view of those
	// that have one.
	Globals []string
	JSON    json.RawMessage
	// Paused is the run waiting for a resume, nil when none.
	Paused *Run
	// Decisions are the decisions on the session's approval calls it
	// keeps, oldest first (session.Decision).
	Decisions []Decided
}

// Decided is a decision on an approval call, as the session keeps it:
// who decided (an API key's name or namespace, an MCP client's name,
// never a key), when, the call, and what came of it ("ok", "raised",
// "denied", "may_have_run").
type Decided struct {
	Time                    time.Time
	Who, Tool, CallID, Args string
	Approved                bool
	Outcome, Exception      string
}

// Run is a paused run.
type Run struct {
	// ID is the run_id of the API.
	ID      string
	Expires time.Time
	Calls   []Call
}

// Call is a call a paused run waits on.
type Call struct {
	ID string
	// Name is the tool as the code calls it ("github.delete_repo").
	Name string
	// Approval marks a call that waits for a person's approval (the
	// console can answer it); other calls are the client's to answer.
	Approval bool
	// Blocking marks the sync call the code is stopped at: it is answered
	// alone.
	Blocking bool
	// MayHaveRun marks an approved call whose resume stopped before its
	// outcome was stored: approving it again makes it again.
	MayHaveRun bool
	// Args is the arguments as JSON: {"args": [...], "kwargs": {...}}.
	Args string
}

// File is a session file.
type File struct {
	Path     string
	Size     int64
	Modified time.Time
}

// Decision answers one approval call.
type Decision struct {
	CallID  string
	Approve bool
}

// Outcome is how a resumed run went on.
type Outcome struct {
	// Status is "completed" or "paused" for a run that went on,
	// "decided" for one a monty.v1 feed waits on (the feed goes on);
	// empty when the resume was refused (Error says why).
	Status string
	// RunID is the new run_id of a run that paused again.
	RunID          string
	Stdout, Stderr string
	// Result is the repr of the run's value.
	Result string
	// Exception is the Python exception the code raised ("PermissionError:
	// ..."), empty when none.
	Exception string
	// SessionID is the session the run is in (empty when refused).
	SessionID string
	// Error is the API's error code and message of a refused resume, and
	// HTTPStatus the status POST /runs/{run_id}/resume answered it with.
	Error      string
	HTTPStatus int
}

// Health is the server's and the store's state.
type Health struct {
	// Status is "ok" or "shutting_down".
	Status string
	// Store is the store's kind, StoreStatus "ok" or "unavailable".
	Store       string
	StoreStatus string
	Checks      []Check
	Duration    time.Duration
}

// Check is one step of the store's check.
type Check struct {
	Name, Status, Error, Message string
	Duration                     time.Duration
}

// Options configure a Console.
type Options struct {
	// SignInTTL is how long a sign-in lasts: 0 means DefaultSignInTTL.
	SignInTTL time.Duration
	// Guard counts the sign-ins with keys that are not accepted, by
	// address (shared with the API the console is part of): past its
	// threshold they are answered 429. Nil counts none.
	Guard *apikey.Guard
}

// DefaultSignInTTL is how long a sign-in lasts when Options.SignInTTL is 0.
const DefaultSignInTTL = 8 * time.Hour

// Console serves the pages under /ui. It is safe for concurrent use.
type Console struct {
	b     Backend
	auth  *auth
	guard *apikey.Guard
	mux   *http.ServeMux
}

// New returns a Console to mount at /ui/ (its handler expects the full
// request path, /ui/...), serving the data of b. secret signs the
// console's cookies and CSRF tokens (a key derived from it, so it can be
// the server's state signing key): at least 16 bytes; instances sharing
// it accept each other's cookies.
func New(b Backend, secret []byte, opts Options) (*Console, error) {
	switch {
	case b == nil:
		return nil, fmt.Errorf("%w: a Backend is required", ErrConfig)
	case len(secret) < 16:
		return nil, fmt.Errorf("%w: the secret must be at least 16 bytes", ErrConfig)
	case opts.SignInTTL < 0:
		return nil, fmt.Errorf("%w: Options.SignInTTL must not be negative", ErrConfig)
	}
	if opts.SignInTTL == 0 {
		opts.SignInTTL = DefaultSignInTTL
	}
	c := &Console{b: b, auth: newAuth(secret, opts.SignInTTL), guard: opts.Guard, mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

// ServeHTTP implements http.Handler: it serves the paths under /ui.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// csp allows the console's own script and style files and nothing else:
// no inline script, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
