package session

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/monty-go/monty/session/store"
)

// A claim's lease in the store (Manager.Claim): the claim on a session is
// an entry of the session's store beside its state, written under
// compare-and-set, so that of the instances sharing the store one at a
// time runs the session. Its holder renews it every third of its time to
// live; when the holder dies, the entry lapses and another instance takes
// the session over, at most DefaultLeaseTTL later. A lease that cannot be
// renewed is given up a tenth of its time to live before it lapses: its
// holder is told (Lease.Lost) and stops before another instance may take
// the session, and the compare-and-set of the session's state refuses
// whatever it still tries to store after a new holder stored.
//
// The lapse is judged by each instance's clock, so the instances' clocks
// must agree to within that tenth (half a second; NTP does).

// DefaultLeaseTTL is how long a claim's lease in the store holds without
// being renewed (ManagerOptions.LeaseTTL): the longest a session stays
// claimed by an instance that died.
const DefaultLeaseTTL = 5 * time.Second

// ErrLeaseLost matches the error of a Lease whose claim in the store
// lapsed (the store could not be written in time) or was taken by another
// instance: its holder must stop using the session.
var ErrLeaseLost = errors.New("session: the claim's lease in the store was lost")

// LeaseID is the store id of the lease of the session stored under id:
// id with ":lease" added, or, when that is too long for a store id, a
// name made of its hash. Listings of sessions leave these out
// (store.IsLease).
func LeaseID(id string) string {
	if len(id)+len(store.LeaseSuffix) <= 200 {
		return id + store.LeaseSuffix
	}
	return fmt.Sprintf("lease.%x%s", sha256.Sum256([]byte(id)), store.LeaseSuffix)
}

// leaseRecord is a lease as stored.
type leaseRecord struct {
	// Token tells this holder's lease from another's.
	Token string `json:"token"`
	// Holder is who holds it (ClaimOptions.Who); Host the process
	// ("host:pid"), for the error of a claim that finds it held.
	Holder string `json:"holder"`
	Host   string `json:"host"`
	// Long: held for long (ClaimOptions.Long).
	Long bool `json:"long,omitempty"`
	// Until is when it lapses unless renewed.
	Until time.Time `json:"until"`
}

// processName names this process in the leases it holds.
var processName = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
})

// storeLease is a claim held in the store, renewed in the background
// until it is released or lost.
type storeLease struct {
	st      store.Store
	key     string
	ttl     time.Duration
	mu      sync.Mutex
	rec     leaseRecord
	version string
	// unheld: the store refused the lease's write (it cannot be written,
	// so no other instance can store the session either): the claim is
	// this process's only until the lease can be written (reacquire).
	unheld bool

	stop chan struct{} // closed by release
	done chan struct{} // closed when the renewal ends
	// lost ends, with the reason as its cause, when the lease is lost.
	lost context.Context
	lose context.CancelCauseFunc
}

// A claim waiting for another instance's lease looks again after
// firstLeaseWait, then after twice as long each time, up to leaseWait: a
// request's claim is held for milliseconds, a connection's for long.
const (
	firstLeaseWait = 2 * time.Millisecond
	leaseWait      = 50 * time.Millisecond
)

// acquireLease takes the lease of session id in st for o.Who, waiting up
// to o.Wait for another instance's lease to be released or to lapse (0:
// not at all; negative: as long as ctx lets it; while the holder holds
// for long, at most LongHoldWait, but until the lease first seen lapses,
// so that a session whose holder died is taken over). A store that
// refuses the write (unavailable) gives an unheld lease: see
// storeLease.unheld.
func acquireLease(ctx context.Context, st store.Store, id string, o ClaimOptions, ttl time.Duration) (*storeLease, error) {
	l := &storeLease{st: st, key: LeaseID(id), ttl: ttl}
	start := time.Now()
	var lapse time.Time // when the first long holder's lease lapses
	backoff := firstLeaseWait
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("session %s: claiming it in the store: %w", id, context.Cause(ctx))
		}
		l.rec = leaseRecord{Token: newClaimToken(), Holder: o.Who, Host: processName(), Long: o.Long, Until: time.Now().Add(ttl).UTC()}
		data, _ := json.Marshal(l.rec) // a plain struct always marshals
		info, err := st.Put(ctx, l.key, data, store.Cond{IfAbsent: true})
		if err == nil {
			l.version = info.Version
			return l.start(), nil
		}
		if !isConflict(err) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("session %s: claiming it in the store: %w", id, context.Cause(ctx))
			}
			if errors.Is(err, store.ErrUnavailable) {
				l.unheld = true
				return l.start(), nil
			}
			return nil, fmt.Errorf("session %s: claiming it in the store: %w", id, err)
		}
		obj, err := st.Get(ctx, l.key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue // released meanwhile
		case errors.Is(err, store.ErrUnreadable):
			// Damaged: not a lease anyone holds.
			if err := st.Delete(ctx, l.key); err != nil {
				return nil, fmt.Errorf("session %s: removing its damaged claim in the store: %w", id, err)
			}
			continue
		case err != nil:
			if errors.Is(err, store.ErrUnavailable) && ctx.Err() == nil {
				l.unheld = true
				return l.start(), nil
			}
			return nil, fmt.Errorf("session %s: reading its claim in the store: %w", id, err)
		}
		var other leaseRecord
		if json.Unmarshal(obj.Data, &other) != nil || other.Token == "" || !time.Now().Before(other.Until) {
			// Lapsed (its holder died), or not a lease at all: take it.
			info, err := st.Put(ctx, l.key, data, store.Cond{IfVersion: obj.Info.Version})
			if err == nil {
				l.version = info.Version
				return l.start(), nil
			}
			if !isConflict(err) {
				return nil, fmt.Errorf("session %s: taking over its lapsed claim in the store: %w", id, err)
			}
			continue
		}
		limit := o.Wait
		if other.Long && limit != 0 {
			// Held for long, as a connection holds its session: waited
			// for LongHoldWait at the most, but until the lease seen
			// first lapses, when its holder may have died.
			if lapse.IsZero() {
				lapse = other.Until
			}
			if limit < 0 || limit > LongHoldWait {
				limit = LongHoldWait
			}
			limit = max(limit, lapse.Sub(start)+leaseWait/2)
		}
		waited := time.Since(start)
		if limit >= 0 && waited >= limit {
			return nil, &BusyError{ID: id, Holder: other.Holder + " on " + other.Host, Waited: waitedIf(limit, waited)}
		}
		pause := min(backoff, time.Until(other.Until)+time.Millisecond)
		backoff = min(2*backoff, leaseWait)
		if limit >= 0 {
			pause = min(pause, limit-waited)
		}
		t := time.NewTimer(max(pause, time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("session %s: waiting for %s on %s to release it: %w", id, other.Holder, other.Host, context.Cause(ctx))
		}
	}
}

// waitedIf is how long a claim that gave up after waited waited: 0 when
// it was not to wait (limit 0).
func waitedIf(limit, waited time.Duration) time.Duration {
	if limit == 0 {
		return 0
	}
	return waited
}

// start starts renewing l (or, unheld, taking its place in the store).
func (l *storeLease) start() *storeLease {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	l.lost, l.lose = context.WithCancelCause(context.Background())
	if l.unheld {
		go l.reacquire()
		return l
	}
	go l.renew()
	return l
}

// reacquire writes an unheld lease into the store as soon as the store
// takes writes again, and goes on renewing it; the lease is lost when
// another instance's lease is there first (it took the session while this
// one could not reach the store).
func (l *storeLease) reacquire() {
	t := time.NewTicker(l.ttl / 10)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			close(l.done)
			return
		case <-t.C:
		}
		l.mu.Lock()
		rec := l.rec
		l.mu.Unlock()
		rec.Until = time.Now().Add(l.ttl).UTC()
		data, _ := json.Marshal(rec)
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		info, err := l.st.Put(ctx, l.key, data, store.Cond{IfAbsent: true})
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			l.rec, l.version, l.unheld = rec, info.Version, false
			l.mu.Unlock()
			l.renew() // closes done
			return
		case isConflict(err):
			l.lose(fmt.Errorf("%w: another instance claimed the session while this one could not write the store", ErrLeaseLost))
			close(l.done)
			return
		}
	}
}

// isUnheld reports whether l is not (yet) in the store.
func (l *storeLease) isUnheld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unheld
}

// renew renews the lease every third of its time to live until it is
// released. When the store cannot be written, it tries again more often,
// and gives the lease up a tenth of its time to live before it lapses
// (so that its holder stops before another instance may take the session
// over); a renewal that finds another's lease in its place loses it at
// once.
func (l *storeLease) renew() {
	defer close(l.done)
	margin := l.ttl / 10
	t := time.NewTimer(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		rec, version := l.rec, l.version
		l.mu.Unlock()
		giveUp := rec.Until.Add(-margin)
		next := rec
		next.Until = time.Now().Add(l.ttl).UTC()
		data, _ := json.Marshal(next)
		ctx, cancel := context.WithDeadline(context.Background(), giveUp)
		info, err := l.st.Put(ctx, l.key, data, store.Cond{IfVersion: version})
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			l.rec, l.version = next, info.Version
			l.mu.Unlock()
			t.Reset(l.ttl / 3)
		case isConflict(err):
			l.lose(fmt.Errorf("%w: another instance took it over after it lapsed", ErrLeaseLost))
			return
		case !time.Now().Before(giveUp):
			l.lose(fmt.Errorf("%w: it lapsed while the store could not be written: %w", ErrLeaseLost, err))
			return
		default:
			t.Reset(min(margin, time.Until(giveUp)))
		}
	}
}

// err is why l was lost (nil: it holds).
func (l *storeLease) err() error {
	if l.lost.Err() == nil {
		return nil
	}
	return context.Cause(l.lost)
}

// release stops renewing l and removes it from the store, unless it was
// lost (or never held there).
func (l *storeLease) release() {
	close(l.stop)
	<-l.done
	if l.isUnheld() || l.err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
	defer cancel()
	if !time.Now().Before(l.rec.Until) {
		// Lapsed: another instance may hold it now; remove only ours.
		obj, err := l.st.Get(ctx, l.key)
		if err != nil || obj.Info.Version != l.version {
			return
		}
	}
	if err := l.st.Delete(ctx, l.key); err != nil {
		// Retried until it lapses by itself, so that a claim need not
		// wait for that once the store is back.
		go l.retryDelete()
	}
}

// retryDelete removes the lease, which release could not, until it
// lapses.
func (l *storeLease) retryDelete() {
	for time.Now().Before(l.rec.Until) {
		time.Sleep(l.ttl / 20)
		ctx, cancel := context.WithDeadline(context.Background(), l.rec.Until)
		err := l.st.Delete(ctx, l.key)
		cancel()
		if err == nil {
			return
		}
	}
}
