package httpapi

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/monty-go/monty/session"
)

// hotSessions keeps sessions open between requests, so that a session
// continued request after request runs on its live interpreter instead of
// loading its state each time: each call still checks the store's version
// first (another instance may have continued the session) and loads only
// when it moved. At most max stay open, the least recently used closed
// first, and none stays idle longer than idle. A session is lent to one
// request at a time; a concurrent request for it opens its own, as it
// would with none kept. Safe for concurrent use.
type hotSessions struct {
	max  int
	idle time.Duration

	mu     sync.Mutex
	byID   map[string]*list.Element // of *hotSession, idle ones only
	lru    *list.List               // front = most recently returned
	closed bool
}

type hotSession struct {
	id       string
	s        *session.Session
	returned time.Time
}

// defaultHotSessions and hotIdle are the defaults of Options.HotSessions
// and how long a session stays open unused.
const (
	defaultHotSessions = 64
	hotIdle            = 5 * time.Minute
)

func newHotSessions(max int) *hotSessions {
	return &hotSessions{max: max, idle: hotIdle, byID: map[string]*list.Element{}, lru: list.New()}
}

// take lends the open session id, if one is kept and idle; the caller
// gives it back with put, or closes it.
func (h *hotSessions) take(id string) *session.Session {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byID[id]
	if !ok {
		return nil
	}
	delete(h.byID, id)
	h.lru.Remove(el)
	return el.Value.(*hotSession).s
}

// put keeps s open for the next request of id, or closes it (when none
// are kept, one is kept already, or the server is shutting down). It also
// closes the sessions over the cap or idle too long.
func (h *hotSessions) put(id string, s *session.Session) {
	var toClose []*session.Session
	defer func() {
		for _, s := range toClose {
			_ = s.Close(context.Background())
		}
	}()
	if h == nil {
		toClose = append(toClose, s)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.byID[id]; ok || h.closed {
		toClose = append(toClose, s)
		return
	}
	now := time.Now()
	h.byID[id] = h.lru.PushFront(&hotSession{id: id, s: s, returned: now})
	for el := h.lru.Back(); el != nil; el = h.lru.Back() {
		e := el.Value.(*hotSession)
		if h.lru.Len() <= h.max && now.Sub(e.returned) < h.idle {
			break
		}
		h.lru.Remove(el)
		delete(h.byID, e.id)
		toClose = append(toClose, e.s)
	}
}

// drop closes the kept session id, if any (its state is stored).
func (h *hotSessions) drop(id string) {
	if s := h.take(id); s != nil {
		_ = s.Close(context.Background())
	}
}

// close closes every kept session; later puts close theirs.
func (h *hotSessions) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	var all []*session.Session
	for el := h.lru.Front(); el != nil; el = el.Next() {
		all = append(all, el.Value.(*hotSession).s)
	}
	h.byID, h.lru = map[string]*list.Element{}, list.New()
	h.mu.Unlock()
	for _, s := range all {
		_ = s.Close(context.Background())
	}
}
