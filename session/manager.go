package session

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
)

// Manager is the keeper of live sessions by id (for example one per
// conversation thread), shared by every surface of a process: sessions
// open lazily on first use, at most MaxLive stay open (the least recently
// used idle one is closed when another is needed; its state is already
// stored), and sessions idle for IdleTimeout are closed.
//
// Claim takes a session for one caller at a time, whatever surface it
// serves (an HTTP request, an MCP call, a monty.v1 connection that runs
// the session's interpreter itself), under a busy policy of the caller's:
// wait in a bounded queue, or fail at once with ErrBusy naming who holds
// it. With a store, the claim is also a lease in the store, so that of the
// instances sharing it one at a time runs the session (ManagerOptions.LeaseTTL).
// A Manager is safe for concurrent use.
type Manager struct {
	opts        Options
	maxLive     int
	idleTimeout time.Duration
	warm        int
	keys        func(id string) ([]byte, [][]byte) // ManagerOptions.Keys
	maxWaiting  int
	leaseTTL    time.Duration // 0: claims are this process's only

	poolOnce sync.Once
	pool     *runtime.Pool // own pool, closed with the manager
	poolErr  error

	mu      sync.Mutex
	live    map[string]*list.Element // of *managed
	lru     *list.List               // front = most recently used
	opening map[string]chan struct{} // ids being opened
	claims  map[string]*claim        // ids claimed or waited for
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

type managed struct {
	s        *Session
	lastUsed time.Time
	inUse    int
}

// ErrTooManySessions is returned when MaxLive sessions are all in use.
var ErrTooManySessions = errors.New("session: every live session is busy; retry later or raise MaxLive")

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// MaxLive bounds open sessions (each holds an interpreter); default 64.
	// Negative keeps none: a claimed session is closed at its release (a
	// server whose every call starts empty, or that keeps no state).
	MaxLive int
	// IdleTimeout closes sessions unused for this long; 0 means 15 minutes,
	// negative disables it.
	IdleTimeout time.Duration
	// Warm is how many interpreters are kept instantiated in the
	// background for sessions about to open (Options.Pool, unless set):
	// 0 means 2, negative none.
	Warm int
	// Keys, when set, gives the keys of each session by its id: the
	// session opens with them as its Options.SigningKey and VerifyKeys in
	// place of the Manager's (for example apikey.StoreKeys, which signs
	// each session with a key of its own, as the HTTP API does). It is
	// called as sessions open, possibly concurrently.
	Keys func(id string) (signing []byte, verify [][]byte)
	// MaxWaiting bounds the claims that wait for one session
	// (ClaimOptions.Wait): one more fails at once with ErrBusy. Default
	// DefaultMaxWaiting.
	MaxWaiting int
	// LeaseTTL is how long a claim's lease in the store holds unless its
	// holder renews it (every third of it): with a store (Options.Store),
	// every claim is also a lease there, so that among the instances that
	// share the store one runs a session at a time, and when one dies,
	// another takes its sessions over this long after at the most. 0
	// means DefaultLeaseTTL; negative keeps claims in this process only
	// (one instance per store, or an ephemeral store).
	LeaseTTL time.Duration
}

// DefaultMaxWaiting is ManagerOptions.MaxWaiting's default.
const DefaultMaxWaiting = 16

// NewManager returns a manager opening sessions with opts.
func NewManager(opts Options, mo ManagerOptions) *Manager {
	m := &Manager{
		opts:        opts,
		maxLive:     mo.MaxLive,
		idleTimeout: mo.IdleTimeout,
		warm:        mo.Warm,
		keys:        mo.Keys,
		live:        map[string]*list.Element{},
		lru:         list.New(),
		opening:     map[string]chan struct{}{},
		claims:      map[string]*claim{},
		maxWaiting:  mo.MaxWaiting,
		stop:        make(chan struct{}),
	}
	if m.maxLive == 0 {
		m.maxLive = 64
	}
	if m.maxWaiting <= 0 {
		m.maxWaiting = DefaultMaxWaiting
	}
	if m.idleTimeout == 0 {
		m.idleTimeout = 15 * time.Minute
	}
	if m.warm == 0 {
		m.warm = 2
	}
	switch {
	case opts.Store == nil || mo.LeaseTTL < 0:
	case mo.LeaseTTL == 0:
		m.leaseTTL = DefaultLeaseTTL
	default:
		m.leaseTTL = mo.LeaseTTL
	}
	if m.idleTimeout > 0 {
		m.wg.Add(1)
		go m.janitor()
	}
	return m
}

// Exec runs code in the session id, opening it if needed, under a claim
// that fails at once with ErrBusy while another caller holds the session.
func (m *Manager) Exec(ctx context.Context, id, code string) (*Result, error) {
	l, err := m.Claim(ctx, id, ClaimOptions{Who: "Manager.Exec"})
	if err != nil {
		return nil, err
	}
	defer l.Release()
	s, err := l.Session(ctx, nil)
	if err != nil {
		return nil, err
	}
	return s.Exec(ctx, code)
}

// acquire returns the live session id and a function that releases it
// (while acquired it is not evicted), opening it with opts when it is not
// live (nil: sessionOptions); fresh says it was opened. Lease.Session is
// its one caller: the session is claimed.
func (m *Manager) acquire(ctx context.Context, id string, opts *Options) (s *Session, release func(), fresh bool, err error) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, nil, false, ErrClosed
		}
		if el, ok := m.live[id]; ok {
			e := el.Value.(*managed)
			e.inUse++
			e.lastUsed = time.Now()
			m.lru.MoveToFront(el)
			m.mu.Unlock()
			return e.s, m.releaser(el), false, nil
		}
		if wait, ok := m.opening[id]; ok {
			m.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, nil, false, ctx.Err()
			}
		}
		if err := m.makeRoom(); err != nil {
			m.mu.Unlock()
			return nil, nil, false, err
		}
		done := make(chan struct{})
		m.opening[id] = done
		m.mu.Unlock()

		o := m.sessionOptions(ctx, id)
		if opts != nil {
			// The caller's options, with the Manager's warm interpreters
			// when they are of the same engine and name no pool.
			warm := o.Pool
			o = *opts
			if o.Pool == nil && o.Engine == m.opts.Engine {
				o.Pool = warm
			}
		}
		s, err = Open(ctx, id, o)

		m.mu.Lock()
		delete(m.opening, id)
		close(done)
		if err != nil {
			m.mu.Unlock()
			return nil, nil, false, err
		}
		if m.closed { // closed while this one was opening
			m.mu.Unlock()
			_ = s.Close(context.WithoutCancel(ctx))
			return nil, nil, false, ErrClosed
		}
		el := m.lru.PushFront(&managed{s: s, lastUsed: time.Now(), inUse: 1})
		m.live[id] = el
		m.mu.Unlock()
		return s, m.releaser(el), true, nil
	}
}

func (m *Manager) releaser(el *list.Element) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			el.Value.(*managed).inUse--
			el.Value.(*managed).lastUsed = time.Now()
			m.mu.Unlock()
		})
	}
}

// makeRoom closes the least recently used idle session if the manager is
// full. Callers hold mu.
func (m *Manager) makeRoom() error {
	if len(m.live)+len(m.opening) < max(m.maxLive, 1) {
		return nil
	}
	for el := m.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*managed)
		if e.inUse == 0 {
			m.evict(el)
			return nil
		}
	}
	return ErrTooManySessions
}

// evict closes a session; its state is already stored. Callers hold mu.
func (m *Manager) evict(el *list.Element) {
	e := el.Value.(*managed)
	m.lru.Remove(el)
	delete(m.live, e.s.ID())
	_ = e.s.Close(context.Background())
}

// Store is the store the Manager's claims hold their leases in and its
// sessions open from by default (Options.Store at NewManager; nil: none).
func (m *Manager) Store() store.Store { return m.opts.Store }

// Live returns the number of open sessions.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// Forget closes the live session id, if open and idle (its stored state
// stays). It fails with ErrBusy while a call holds the session and with
// ErrClosed once the manager is closed.
func (m *Manager) Forget(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	el, ok := m.live[id]
	if !ok {
		return nil
	}
	if el.Value.(*managed).inUse > 0 {
		return ErrBusy
	}
	m.evict(el)
	return nil
}

func (m *Manager) janitor() {
	defer m.wg.Done()
	tick := time.NewTicker(min(m.idleTimeout/2, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			m.closeIdle(time.Now().Add(-m.idleTimeout))
		}
	}
}

// closeIdle closes sessions unused since before.
func (m *Manager) closeIdle(before time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for el := m.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*managed)
		if e.inUse == 0 && e.lastUsed.Before(before) {
			m.evict(el)
		}
		el = prev
	}
}

// sessionOptions are the options session id opens with: m.opts, with
// the keys of ManagerOptions.Keys, plus the manager's own pool of warm
// interpreters, started on first use.
func (m *Manager) sessionOptions(ctx context.Context, id string) Options {
	opts := m.opts
	if m.keys != nil {
		opts.SigningKey, opts.VerifyKeys = m.keys(id)
	}
	if opts.Pool != nil || m.warm < 0 {
		return opts
	}
	m.poolOnce.Do(func() {
		eng := m.opts.Engine
		if eng == nil {
			// Not the first caller's cancellation: the pool serves all.
			eng, m.poolErr = runtime.Default(context.WithoutCancel(ctx))
		}
		if m.poolErr == nil {
			m.pool = runtime.NewPool(eng, m.warm)
		}
	})
	opts.Pool = m.pool // nil when the engine failed: Open reports it
	return opts
}

// Close closes every live session and stops the janitor.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	for el := m.lru.Front(); el != nil; el = m.lru.Front() {
		m.evict(el)
	}
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()
	m.poolOnce.Do(func() {}) // no pool starts after this
	if m.pool != nil {
		m.pool.Close(context.Background())
	}
}
