// Package server serves monty.v1 over WebSocket, as upstream's monty-server
// does: pydantic-monty's AsyncMontyWebsocket("ws://HOST:PORT/") checks out
// sessions here. Each connection is one session, served in this process by
// a protocol.Worker over an interpreter from a warm pool.
//
// On top of the worker protocol the server adds what the client's
// server-side extensions ask for:
//
//   - API keys from the upgrade request (x-api-key, or Authorization:
//     Bearer); a missing or unknown key is refused before the upgrade, and
//     each key has its own namespace of stored sessions (package apikey, as
//     the HTTP API).
//   - Stored sessions: unless the client asks for an ephemeral one, a
//     session gets an id (ChildEvent.session_id), and every turn's state
//     (a feed's end, or its suspension) is in the store before the turn's
//     answer is sent, so that a crash of this instance loses nothing a
//     client was answered (Options.ParkOnly stores it only when its
//     connection ends, idles out or the server drains). The connection's
//     claim on its session is a lease in the store (session.Manager), so
//     that another instance takes the session over once this one died. Dump writes
//     a record that never changes and answers with its id; Load takes a
//     session id (continuing that session) or a record id (starting a new
//     session from it), on any instance sharing the store. Sessions are
//     the API key's sessions of the HTTP API (session-state blobs, package
//     session): /exec continues one made here, and Load takes one /exec
//     made. Everything stored is signed with the server's key; what does
//     not verify is never loaded, but kept aside and reported corrupt.
//   - Profiles: named ceilings on limits, operator mounts and host
//     functions (the MCP servers of --connect), chosen by checkout(profile=).
//   - Drain: after Shutdown starts, each session's next request is not run:
//     the session is parked and answered with ShutdownDump naming it, which
//     the client's auto_resume loads on another instance.
//   - Capacity and timeouts: connections in all and per key, idle and
//     per-turn timeouts, and a frame size cap applied before a frame is
//     read.
//
// A Server is safe for concurrent use.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/tools"
)

// Defaults of Options.
const (
	DefaultMaxConns       = 256
	DefaultMaxConnsPerKey = 64
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultTurnTimeout    = 5 * time.Minute
	DefaultMaxFrame       = 16 << 20
	DefaultFrameTimeout   = 30 * time.Second
)

// MinSigningKey is the shortest signing key accepted.
const MinSigningKey = 16

// ErrConfig reports invalid Options.
var ErrConfig = errors.New("monty.v1 server: invalid configuration")

// Profile is a named set of what a session may use, chosen by the client
// with checkout(profile=NAME). The zero Profile lets a session set its own
// limits and gives it nothing of the host's.
type Profile struct {
	// Limits are ceilings on what the client asks for: MaxMemory,
	// MaxRecursion and MaxDuration (the feed's execution time) lower the
	// session's limits when they are set and the client asks for more or
	// for none. Zero fields leave the client's.
	Limits runtime.Limits
	// Mounts are host directories the operator puts in the session's
	// sandbox, opened for each session (an overlay's writes are that
	// session's alone). Their OS calls are served here; every other OS call
	// goes to the client.
	Mounts []vfs.MountSpec
	// Host answers the code's name lookups and calls in the server before
	// they reach the client: host functions (an MCP server's tools, through
	// tools.Registry.Host), values and host objects, and OS calls its OS
	// handler serves (after the mounts). It is shared by every session and
	// must be safe for concurrent use. Nil forwards everything to the
	// client.
	Host *runtime.Host
	// ParkOnly stores the profile's sessions only when their connection
	// ends, idles out, is reset or the server drains (as Options.ParkOnly,
	// for this profile alone).
	ParkOnly bool
	// Tools is the registry behind Host's host objects (Registry.Host),
	// when it has methods that wait for a person's approval (an MCP
	// server's tools, mcpclient): such a call pauses the session durably
	// until a person decides it (the console, POST /runs/{run_id}/resume
	// of the HTTP API sharing the store), within the feed's turn time
	// limit, and the server makes the approved call. Nil: such calls raise
	// PermissionError.
	Tools *tools.Registry
}

// Options configure a Server.
type Options struct {
	// Engine runs the interpreters (runtime.Default when nil).
	Engine *runtime.Engine
	// PoolSize is the number of warm interpreters kept ready (0: 4).
	PoolSize int
	// Store keeps stored sessions and dump records; nil makes every session
	// ephemeral (no session ids, Dump and Load by id refused).
	Store store.Store
	// SigningKey signs everything stored (required with Store, at least
	// MinSigningKey bytes); every instance sharing the store needs it, and
	// an HTTP API sharing the store and its sessions has the same key.
	SigningKey []byte
	// ParkOnly stores sessions only when their connection ends, idles
	// out, is reset or the server drains, not after each turn: a turn is
	// answered before its state is stored, which saves a store write per
	// turn, and a crash of the instance (SIGKILL, OOM kill, a node lost)
	// loses what its sessions did since they were last parked, and
	// sessions never parked at all. False (the default): every turn's
	// state is stored before its answer is sent.
	ParkOnly bool
	// MaxStateSize caps a stored session or record
	// (session.DefaultMaxStateSize when 0): a session over it is not
	// parked (the log says so), and dump() fails.
	MaxStateSize int64
	// APIKeys are the accepted keys; none accepts every client, in one
	// namespace.
	APIKeys []string
	// Profiles by name; "" is the profile of a session that names none (the
	// zero Profile when absent).
	Profiles map[string]Profile
	// MaxConns bounds connections in all (DefaultMaxConns), MaxConnsPerKey
	// those of one API key (DefaultMaxConnsPerKey); more are refused with
	// 503 at the upgrade.
	MaxConns, MaxConnsPerKey int
	// IdleTimeout closes a connection whose client sends nothing for this
	// long, parking its session (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// TurnTimeout closes a connection whose request runs longer than this
	// (DefaultTurnTimeout); the session keeps what was last parked.
	TurnTimeout time.Duration
	// MaxFrame bounds one request frame (DefaultMaxFrame): a frame whose
	// header announces more is refused as soon as the header is in, before
	// any of it is read, and the connection closed with 1009 (message too
	// big).
	MaxFrame int64
	// FrameTimeout bounds how long a request frame (a fragmented message:
	// all of its frames) may take to arrive once its first byte has
	// (DefaultFrameTimeout); a client whose frame stops arriving midway is
	// disconnected (close 1008) rather than holding its connection until
	// IdleTimeout.
	FrameTimeout time.Duration
	// Checker type-checks for sessions that ask (typecheck.Default when nil).
	Checker *typecheck.Checker
	// Guard counts failed authentications by client address (shared with
	// the HTTP API of the same instance): past its threshold an address's
	// upgrades with a missing or unknown key are refused 429 with
	// Retry-After. Nil: a Guard of the server's own, with apikey's
	// defaults.
	Guard *apikey.Guard
	// Keeper is the keeper of sessions the server shares with the process's
	// other surfaces (monty serve's HTTP API): a connection claims its
	// session for as long as it holds it, so that no request runs it
	// meanwhile (its claims fail as busy), and a load waits a moment for
	// the session's holder to release it. Required with a Store; the
	// server does not close it.
	Keeper *session.Manager
	// Telemetry reports spans and metrics (telemetry.Default when nil).
	Telemetry *telemetry.Telemetry
	// Logger receives the server's records (slog.Default when nil).
	Logger *slog.Logger
}

// Server is the monty.v1 WebSocket server: an http.Handler for the upgrade
// at "/". It is safe for concurrent use.
type Server struct {
	opts  Options
	keys  apikey.Set
	pool  *runtime.Pool
	store store.Store
	// keeper holds the claims of the stored sessions (nil without a
	// store).
	keeper *session.Manager
	log    *slog.Logger
	tel    *telemetry.Telemetry

	mu       sync.Mutex
	conns    map[*conn]struct{}
	perKey   map[string]int
	draining bool
	wg       sync.WaitGroup
	drain    chan struct{} // closed when Shutdown starts
}

// New checks opts and returns a Server.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Store != nil && len(opts.SigningKey) < MinSigningKey {
		return nil, fmt.Errorf("%w: a signing key of at least %d bytes is required to store sessions", ErrConfig, MinSigningKey)
	}
	if opts.Store != nil && opts.Keeper == nil {
		return nil, fmt.Errorf("%w: a Keeper is required to store sessions: the process's keeper of live sessions (session.NewManager), shared by its surfaces", ErrConfig)
	}
	for _, k := range opts.APIKeys {
		if k == "" {
			return nil, fmt.Errorf("%w: an API key is empty", ErrConfig)
		}
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxConnsPerKey <= 0 {
		opts.MaxConnsPerKey = DefaultMaxConnsPerKey
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.TurnTimeout <= 0 {
		opts.TurnTimeout = DefaultTurnTimeout
	}
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = DefaultMaxFrame
	}
	if opts.FrameTimeout <= 0 {
		opts.FrameTimeout = DefaultFrameTimeout
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Guard == nil {
		opts.Guard = apikey.NewGuard(apikey.GuardOptions{})
	}
	if opts.Engine == nil {
		e, err := runtime.Default(ctx)
		if err != nil {
			return nil, err
		}
		opts.Engine = e
	}
	s := &Server{
		opts: opts, keys: apikey.New(opts.APIKeys), log: opts.Logger, tel: opts.Telemetry.Or(),
		pool:  runtime.NewPool(opts.Engine, opts.PoolSize),
		conns: map[*conn]struct{}{}, perKey: map[string]int{}, drain: make(chan struct{}),
	}
	if opts.Store != nil {
		s.store = s.tel.Store(opts.Store)
	}
	if opts.Store != nil {
		s.keeper = opts.Keeper
	}
	return s, nil
}

// Draining reports whether Shutdown has started.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Connections returns the number of open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// IsUpgrade reports whether r asks for a WebSocket (what ServeHTTP serves).
func IsUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// ServeHTTP accepts a WebSocket connection at "/" and serves its session.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.Error(w, "monty.v1 is served at /", http.StatusNotFound)
		return
	}
	ns, ok := s.keys.Namespace(apikey.FromRequest(r))
	if !ok {
		client := s.opts.Guard.Client(r)
		if d := s.opts.Guard.Failed(client); d > 0 {
			w.Header().Set("Retry-After", apikey.RetryAfter(d))
			http.Error(w, "too many upgrades with a missing or unknown API key from this address; wait for Retry-After", http.StatusTooManyRequests)
			s.log.Warn("monty.v1 connection refused", "reason", "authentication failures over the limit", "client", client)
			return
		}
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "missing or unknown API key: send it in x-api-key or Authorization: Bearer", http.StatusUnauthorized)
		s.log.Info("monty.v1 connection refused", "reason", "unauthorized", "remote", r.RemoteAddr)
		return
	}
	c, reason := s.admit(ns)
	if c == nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, reason, http.StatusServiceUnavailable)
		s.log.Warn("monty.v1 connection refused", "reason", reason, "namespace", ns)
		return
	}
	defer s.release(c)
	ws, err := websocket.Accept(&guardWriter{ResponseWriter: w, limit: s.opts.MaxFrame, timeout: s.opts.FrameTimeout}, r, nil)
	if err != nil {
		s.log.Info("monty.v1 upgrade failed", "error", err)
		return
	}
	ws.SetReadLimit(s.opts.MaxFrame)
	c.ws = ws
	c.base = s.tel.ExtractHTTP(context.WithoutCancel(r.Context()), r.Header)
	c.serve()
}

// admit reserves a place for a connection of namespace ns.
func (s *Server) admit(ns string) (*conn, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.draining:
		return nil, "the server is shutting down; connect to another instance"
	case len(s.conns) >= s.opts.MaxConns:
		return nil, fmt.Sprintf("the server is at its limit of %d connections; retry shortly", s.opts.MaxConns)
	case s.perKey[ns] >= s.opts.MaxConnsPerKey:
		return nil, fmt.Sprintf("this API key is at its limit of %d connections; close one or retry shortly", s.opts.MaxConnsPerKey)
	}
	c := &conn{s: s, ns: ns}
	s.conns[c] = struct{}{}
	s.perKey[ns]++
	s.wg.Add(1)
	return c, ""
}

func (s *Server) release(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perKey[c.ns]--; s.perKey[c.ns] <= 0 {
		delete(s.perKey, c.ns)
	}
	s.mu.Unlock()
	s.wg.Done()
}

// Shutdown drains: new connections are refused, each session's next request
// is answered with ShutdownDump after its session is parked, and Shutdown
// waits for every connection to end. When ctx ends first, the remaining
// connections are parked and closed, and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		close(s.drain)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.pool.Close(context.Background())
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.abandon()
	}
	s.mu.Unlock()
	<-done
	s.pool.Close(context.Background())
	return ctx.Err()
}

// ---- stored sessions -------------------------------------------------------

// Where sessions and records live in the store. A session is one of the
// API key's sessions (apikey.StoreID and StateKey, the HTTP API's layout),
// a session-state blob whose Driver section holds the worker's
// configuration and clocks, so that the HTTP API and MCP continue it and
// this server loads theirs. A record (dump()) is the same kind of blob in
// the namespace's record space beside them, never among them. Releases
// before state format 7 parked sessions in the record space too, in the
// MV1S format (legacy.go); those still load.

// driverName names this surface in the sessions it stores.
const driverName = "monty.v1"

// recordSpace follows a namespace to name the space of its records.
const recordSpace = ".monty-v1"

// newID is a new session ("s-") or record ("r-") id: the prefix and 32 hex
// digits.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// isRecordID reports whether id is a record's id, as dump() gives them.
func isRecordID(id string) bool {
	if len(id) != 34 || id[:2] != "r-" {
		return false
	}
	_, err := hex.DecodeString(id[2:])
	return err == nil
}

// place is where a session or record is stored: its store id and the
// options of its state.
type place struct {
	storeID string
	opts    session.Options
}

// sessionPlace is where session id of namespace ns lives: among the API
// key's sessions.
func (s *Server) sessionPlace(ns, id string) place {
	return place{apikey.StoreID(ns, id), s.stateOptions(ns, id, apikey.LegacyKeys(s.opts.SigningKey))}
}

// recordPlace is where record id of namespace ns lives.
func (s *Server) recordPlace(ns, id string) place {
	return place{apikey.StoreID(ns+recordSpace, id), s.stateOptions(ns+recordSpace, id, nil)}
}

func (s *Server) stateOptions(ns, id string, verify [][]byte) session.Options {
	return session.Options{Store: s.opts.Store, Engine: s.opts.Engine, Telemetry: s.tel, MaxStateSize: s.opts.MaxStateSize,
		SigningKey: apikey.StateKey(s.opts.SigningKey, ns, id), VerifyKeys: verify}
}
