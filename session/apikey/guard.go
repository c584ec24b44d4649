package apikey

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of GuardOptions.
const (
	DefaultMaxFailures   = 20
	DefaultFailureWindow = time.Minute
	// maxClients bounds the addresses a Guard counts at once: past it the
	// oldest count is dropped, so a flood of addresses costs bounded memory.
	maxClients = 10000
)

// GuardOptions configure a Guard.
type GuardOptions struct {
	// MaxFailures is how many failed authentications one client address
	// may make in a Window before its next failures are answered 429
	// (DefaultMaxFailures when 0).
	MaxFailures int
	// Window is how long failures count (DefaultFailureWindow when 0): a
	// client past MaxFailures is refused until the window that counted
	// them ends.
	Window time.Duration
	// TrustForwardedFor takes the client address from the first hop of
	// X-Forwarded-For (as a proxy in front of the server sets it) rather
	// than from the connection. Only behind a proxy that sets it: a
	// client could otherwise choose its own address.
	TrustForwardedFor bool
}

// Guard counts failed authentications by client address, so that keys
// cannot be guessed online: past GuardOptions.MaxFailures in a window, an
// address's failures are refused (429 with Retry-After) until the window
// ends. A good key from the same address still works. One Guard is shared
// by every surface of an instance that checks keys (the HTTP API, its
// console's sign-in, the monty.v1 upgrade). A nil *Guard counts nothing.
// A Guard is safe for concurrent use.
type Guard struct {
	opts GuardOptions
	now  func() time.Time

	mu      sync.Mutex
	clients map[string]*failures
}

// failures are one address's failures in the window that started at start.
type failures struct {
	start time.Time
	n     int
}

// NewGuard returns a Guard.
func NewGuard(opts GuardOptions) *Guard {
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = DefaultMaxFailures
	}
	if opts.Window <= 0 {
		opts.Window = DefaultFailureWindow
	}
	return &Guard{opts: opts, now: time.Now, clients: map[string]*failures{}}
}

// Client is the address r's failures count under: the connection's host,
// or with TrustForwardedFor the first hop of X-Forwarded-For.
func (g *Guard) Client(r *http.Request) string {
	if g != nil && g.opts.TrustForwardedFor {
		if first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-For"), ","); strings.TrimSpace(first) != "" {
			return strings.TrimSpace(first)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Failed records a failed authentication of client and reports how long
// it is to be refused: 0 while it is under MaxFailures, else until its
// window ends.
func (g *Guard) Failed(client string) (retryAfter time.Duration) {
	if g == nil {
		return 0
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.clients[client]
	if f == nil || now.Sub(f.start) >= g.opts.Window {
		if f == nil && len(g.clients) >= maxClients {
			g.prune(now)
		}
		f = &failures{start: now}
		g.clients[client] = f
	}
	f.n++
	if f.n <= g.opts.MaxFailures {
		return 0
	}
	return f.start.Add(g.opts.Window).Sub(now)
}

// prune drops the counts whose window ended, and the oldest when none
// did. Callers hold mu.
func (g *Guard) prune(now time.Time) {
	var oldest string
	for c, f := range g.clients {
		if now.Sub(f.start) >= g.opts.Window {
			delete(g.clients, c)
		} else if oldest == "" || f.start.Before(g.clients[oldest].start) {
			oldest = c
		}
	}
	if len(g.clients) >= maxClients {
		delete(g.clients, oldest)
	}
}

// RetryAfter is the Retry-After value for a refusal of d: whole seconds,
// at least one.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10)
}
