package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/tiered"
)

// DefaultHealthTimeout bounds the store round trip of GET /health/store
// when Options.HealthTimeout is 0.
const DefaultHealthTimeout = 3 * time.Second

// Liveness is the body of GET /health.
type Liveness struct {
	// Status is "ok", or "shutting_down" while the server drains (the
	// answer is 200 either way: the process is alive).
	Status string `json:"status"`
}

// StoreHealth is the body of GET /health/store.
type StoreHealth struct {
	// Status is "ok" (200), or "unavailable" (503) when a check failed or
	// did not finish within the timeout.
	Status string `json:"status"`
	// Store is the kind of store: "dirstore", "memstore", "redisstore",
	// "s3store", "tiered", or the Go type of another store.
	Store string `json:"store"`
	// Checks are the steps, in order: "write", "read" and "delete" of a
	// probe blob through the store (as sessions use it), then for a tiered
	// store a read from each tier, "hot" and "archive" (which tell which
	// tier fails). The read is "skipped" after a failed write; the delete
	// is tried anyway.
	Checks []StoreCheck `json:"checks"`
	// DurationMS is the time the checks took.
	DurationMS float64 `json:"duration_ms"`
}

// StoreCheck is one step of GET /health/store.
type StoreCheck struct {
	// Name is "write", "read", "delete", "hot" or "archive".
	Name string `json:"name"`
	// Status is "ok", "failed" or "skipped".
	Status     string  `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	// Error is a code when the step failed: "store_unavailable",
	// "timeout", "unreadable" (the store answered but cannot read the
	// entry), "mismatch" (it read back other bytes than were written),
	// "conflict" or "error".
	Error string `json:"error,omitempty"`
	// Message says what failed, in general terms: the store's own error
	// (which may name hosts, paths or credentials) goes to the server's
	// log only.
	Message string `json:"message,omitempty"`

	detail string // the store's error, passwords blanked, for the log
}

// probe runs one store check at a time: concurrent requests share it.
type probe struct {
	once sync.Once
	id   string // the probe blob's store id, this handler's own

	mu      sync.Mutex
	current *probeRun
}

type probeRun struct {
	done   chan struct{}
	result StoreHealth
}

// health serves GET /health: liveness, without touching the store.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) *apiError {
	out, status := Liveness{Status: "ok"}, http.StatusOK
	if h.Draining() {
		// 503, so that a load balancer stops sending new work here.
		out.Status, status = "shutting_down", http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, out)
	return nil
}

// Draining reports whether Shutdown has started.
func (h *Handler) Draining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

// healthStore serves GET /health/store: a real round trip through the
// store, bounded by Options.HealthTimeout. Requests that arrive while a
// check runs get its result, so the store sees at most one probe at a time
// from this handler.
func (h *Handler) healthStore(w http.ResponseWriter, r *http.Request, _ string) *apiError {
	run := h.startProbe()
	select {
	case <-run.done:
	case <-r.Context().Done():
		return storeError(r.Context().Err())
	}
	status := http.StatusOK
	if run.result.Status != "ok" {
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, run.result)
	return nil
}

// startProbe returns the check in progress, or starts one.
func (h *Handler) startProbe() *probeRun {
	p := &h.probe
	p.once.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:])
		// Outside every namespace ("public/", "k…/"): no client id names it.
		p.id = "health/probe-" + hex.EncodeToString(b[:])
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current != nil {
		return p.current
	}
	run := &probeRun{done: make(chan struct{})}
	p.current = run
	go func() {
		run.result = checkStore(context.Background(), h.opts.Session.Store, p.id, h.opts.HealthTimeout)
		for _, c := range run.result.Checks {
			if c.detail != "" {
				h.log.Warn("store health check failed", "check", c.Name, "error", c.Error, "detail", c.detail)
			}
		}
		p.mu.Lock()
		p.current = nil
		p.mu.Unlock()
		close(run.done)
	}()
	return run
}

// checkStore writes, reads back and deletes a probe blob under id, then
// reads from each tier of a tiered store, all within timeout.
func checkStore(ctx context.Context, st store.Store, id string, timeout time.Duration) StoreHealth {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	out := StoreHealth{Status: "ok", Store: storeKind(st)}
	written := true
	step := func(name string, f func() error) {
		c := StoreCheck{Name: name, Status: "ok"}
		if name == "read" && !written {
			c.Status = "skipped"
			out.Checks = append(out.Checks, c)
			return
		}
		t := time.Now()
		err := f()
		c.DurationMS = durationMS(time.Since(t))
		if err != nil {
			c.Status, c.Error, c.detail = "failed", checkCode(ctx, err), redactSecrets(err.Error())
			c.Message = checkMessages[c.Error]
			out.Status = "unavailable"
			written = written && name != "write"
		}
		out.Checks = append(out.Checks, c)
	}
	data := make([]byte, 32)
	_, _ = rand.Read(data)
	step("write", func() error {
		_, err := st.Put(ctx, id, data, store.Cond{})
		return err
	})
	step("read", func() error {
		obj, err := st.Get(ctx, id)
		if err == nil && !bytes.Equal(obj.Data, data) {
			err = errMismatch
		}
		return err
	})
	step("delete", func() error { return st.Delete(ctx, id) })
	if ts, ok := unwrapped(st).(*tiered.Store); ok {
		hot, cold := ts.Tiers()
		for _, t := range []struct {
			name string
			st   store.Store
		}{{"hot", hot}, {"archive", cold}} {
			step(t.name, func() error {
				// A read that reaches the backend (an id never written).
				_, err := t.st.Stat(ctx, id+"-absent")
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			})
		}
	}
	out.DurationMS = durationMS(time.Since(start))
	return out
}

// errMismatch: the store read back other bytes than were written.
var errMismatch = errors.New("the store read back other bytes than were written")

// checkCode classifies a failed step.
// checkMessages describe the check failures for clients.
var checkMessages = map[string]string{
	"timeout":           "the store did not answer in time",
	"mismatch":          "the store returned other bytes than were written",
	"unreadable":        "the store answered but could not read the entry",
	"conflict":          "the store refused the write as a conflict",
	"store_unavailable": "the store cannot be reached",
	"error":             "the store failed; the server's log has the detail",
}

func checkCode(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "timeout"
	case errors.Is(err, errMismatch):
		return "mismatch"
	case errors.Is(err, store.ErrUnreadable):
		return "unreadable"
	case errors.Is(err, store.ErrConflict):
		return "conflict"
	case errors.Is(err, store.ErrUnavailable):
		return "store_unavailable"
	}
	return "error"
}

// unwrapped is the store beneath the telemetry wrapper.
func unwrapped(st store.Store) store.Store {
	if u, ok := st.(interface{ Unwrap() store.Store }); ok {
		return u.Unwrap()
	}
	return st
}

// storeKind names a store by its package ("redisstore", "tiered", ...).
func storeKind(st store.Store) string {
	t := reflect.TypeOf(unwrapped(st))
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path := t.PkgPath(); path != "" {
		return path[strings.LastIndex(path, "/")+1:]
	}
	return fmt.Sprintf("%T", st)
}

// urlUserinfo matches the user and password of a URL.
var urlUserinfo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@`) })

// redactSecrets blanks the user and password of every URL in s.
func redactSecrets(s string) string {
	return urlUserinfo().ReplaceAllString(s, "${1}***@")
}
