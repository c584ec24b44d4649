package session

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ClaimOptions are a claim's busy policy: what it does when another
// caller holds the session.
type ClaimOptions struct {
	// Who claims, for the error of a claim that finds the session busy
	// ("an HTTP request", "a monty.v1 connection").
	Who string
	// Wait is how long the claim waits in the session's queue for the
	// holder to release it (bounded by ManagerOptions.MaxWaiting and the
	// context); 0 fails at once with ErrBusy, and a negative value waits
	// as long as the context lets it. A session claimed for long (Long)
	// is waited for LongHoldWait at the most.
	Wait time.Duration
	// Long says the claim is held for long, as a monty.v1 connection holds
	// its session: other claims do not queue behind it for more than
	// LongHoldWait (the moment a closing holder takes to release it).
	Long bool
}

// LongHoldWait is the longest a claim waits for a session claimed for
// long (ClaimOptions.Long).
const LongHoldWait = 2 * time.Second

// BusyError is the error of a claim that found its session held: it
// matches ErrBusy and names the holder.
type BusyError struct {
	// ID is the session's id.
	ID string
	// Holder is who holds it (ClaimOptions.Who).
	Holder string
	// Waited is how long the claim waited (0: it did not).
	Waited time.Duration
	// QueueFull is set when the claim did not wait because
	// ManagerOptions.MaxWaiting claims were waiting already.
	QueueFull bool
}

// Error says who holds the session.
func (e *BusyError) Error() string {
	switch {
	case e.QueueFull:
		return fmt.Sprintf("%v: session %s is held by %s, and as many calls as may wait for it do; retry later", ErrBusy, e.ID, e.Holder)
	case e.Waited > 0:
		return fmt.Sprintf("%v: session %s is held by %s after waiting %s; it is free again when that ends", ErrBusy, e.ID, e.Holder, e.Waited)
	}
	return fmt.Sprintf("%v: session %s is held by %s; it is free again when that ends", ErrBusy, e.ID, e.Holder)
}

// Is makes a BusyError match ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// claim is who holds session id, and how many wait for it.
type claim struct {
	token   chan struct{} // holds a token while claimed
	holder  string        // who holds it (ClaimOptions.Who)
	long    bool          // it holds it for long (ClaimOptions.Long)
	waiting int           // claims holding or waiting for the token
}

// Lease is a claim on one session: while it is held, no other claim gets
// the session. Release it when done. A Lease is one caller's: it is not
// safe for concurrent use.
type Lease struct {
	m     *Manager
	id    string
	c     *claim
	sl    *storeLease // the claim in the store (nil: this process's only)
	s     *Session    // the session acquired, nil until Session
	done  func()      // releases it
	fresh bool        // Session opened it from the store
	d     *Driven     // the session as its driver keeps it (Keep)
	once  sync.Once
}

// Claim takes session id for one caller under o's busy policy, and
// returns the Lease to use it through. A claim that finds the session
// held fails with ErrBusy, naming the holder, at once or once its wait
// ends (ctx's error when ctx ended first). Claiming does not open the
// session: Lease.Session does.
func (m *Manager) Claim(ctx context.Context, id string, o ClaimOptions) (*Lease, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	c := m.claims[id]
	if c == nil {
		c = &claim{token: make(chan struct{}, 1)}
		m.claims[id] = c
	}
	if c.waiting > m.maxWaiting {
		holder := c.holder
		m.mu.Unlock()
		return nil, &BusyError{ID: id, Holder: holder, QueueFull: true}
	}
	c.waiting++
	wait := o.Wait
	if c.long && (wait < 0 || wait > LongHoldWait) {
		wait = LongHoldWait
	}
	m.mu.Unlock()
	l := &Lease{m: m, id: id, c: c}
	start := time.Now()
	if wait == 0 {
		select {
		case c.token <- struct{}{}:
			return l.held(ctx, o, 0)
		default:
			return nil, m.busy(l, 0)
		}
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case c.token <- struct{}{}:
		if wait > 0 {
			wait = max(wait-time.Since(start), time.Millisecond)
		}
		return l.held(ctx, o, wait)
	case <-timeout:
		return nil, m.busy(l, wait)
	case <-ctx.Done():
		m.leave(l)
		return nil, fmt.Errorf("session %s: waiting for %s to release it: %w", id, l.holder(), context.Cause(ctx))
	}
}

// Claims is the number of claims of session id: its holder's and those
// waiting for it.
func (m *Manager) Claims(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.claims[id]; c != nil {
		return c.waiting
	}
	return 0
}

// held records who holds l's session, and for how long, once this
// process's claim is l's; then, with a store, takes the claim's lease in
// the store, waiting up to wait for another instance's.
func (l *Lease) held(ctx context.Context, o ClaimOptions, wait time.Duration) (*Lease, error) {
	l.m.mu.Lock()
	l.c.holder, l.c.long = o.Who, o.Long
	if o.Who == "" {
		l.c.holder = "another caller"
	}
	l.m.mu.Unlock()
	if l.m.leaseTTL == 0 {
		return l, nil
	}
	o.Wait = wait
	o.Who = l.c.holder
	sl, err := acquireLease(ctx, l.m.opts.Store, l.id, o, l.m.leaseTTL)
	if err != nil {
		l.unclaim()
		return nil, err
	}
	l.sl = sl
	return l, nil
}

// Lost is closed when the claim's lease in the store is lost (Err says
// why): another instance may run the session now, so its holder stops
// and releases the claim. A claim made while the store refused writes
// holds in this process until its lease can be written, and is lost if
// another instance's is there first. Lost is nil for a claim this process
// holds alone (no store, or ManagerOptions.LeaseTTL negative).
func (l *Lease) Lost() <-chan struct{} {
	if l.sl == nil {
		return nil
	}
	return l.sl.lost.Done()
}

// Err is why the claim was lost (an error matching ErrLeaseLost), nil
// while it holds (and for a nil Lease).
func (l *Lease) Err() error {
	if l == nil || l.sl == nil {
		return nil
	}
	return l.sl.err()
}

// AfterLost arranges for f to run in a goroutine of its own once the
// claim is lost, and returns the function that stops that: it reports
// false when f has started already. Nothing runs for a claim this
// process holds alone.
func (l *Lease) AfterLost(f func()) (stop func() bool) {
	if l.sl == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(l.sl.lost, f)
}

// Bind returns ctx, cancelled with the cause Err once the claim is lost,
// and the function that stops watching for it: a call run under it stops
// when another instance may take the session over.
func (l *Lease) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := l.AfterLost(func() { cancel(l.Err()) })
	return ctx, func() { stop(); cancel(nil) }
}

// holder is who holds l's session now.
func (l *Lease) holder() string {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.c.holder
}

// busy is the error of a claim (l, not held) that found its session
// held after waiting waited, and leaves the queue.
func (m *Manager) busy(l *Lease, waited time.Duration) error {
	holder := l.holder()
	m.leave(l)
	return &BusyError{ID: l.id, Holder: holder, Waited: waited}
}

// leave counts l out of its session's queue.
func (m *Manager) leave(l *Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.c.waiting--; l.c.waiting == 0 {
		delete(m.claims, l.id)
	}
}

// ID is the claimed session's id.
func (l *Lease) ID() string { return l.id }

// Session returns the claimed session, live or opened now with opts (nil:
// the Manager's options, with the keys of ManagerOptions.Keys). It is kept
// open after the lease is released, unless the Manager keeps none
// (MaxLive < 0).
func (l *Lease) Session(ctx context.Context, opts *Options) (*Session, error) {
	if l.s != nil {
		return l.s, nil
	}
	s, done, fresh, err := l.m.acquire(ctx, l.id, opts)
	if err != nil {
		return nil, err
	}
	l.s, l.done, l.fresh = s, done, fresh
	return s, nil
}

// Keep gives the claim the claimed session as a driver keeps it (a
// monty.v1 connection, whose worker runs the interpreter: OpenDriven,
// NewDriven), in place of the one it kept: Driven returns it until the
// claim is released, so that the driver stores the session through what
// the claim holds, and nothing of it outlives the claim.
func (l *Lease) Keep(d *Driven) { l.d = d }

// Driven is the session Keep gave the claim (nil: none, or a nil Lease).
func (l *Lease) Driven() *Driven {
	if l == nil {
		return nil
	}
	return l.d
}

// Fresh reports whether Session opened the session from the store, rather
// than finding it live, kept since an earlier claim (which may have to
// catch up with the store: Session.Sync).
func (l *Lease) Fresh() bool { return l.fresh }

// Forget closes the claimed session if it is live (its stored state stays):
// the next Session opens it again from the store, as after a failure that
// may have left it in doubt.
func (l *Lease) Forget() {
	if l.s != nil {
		l.done()
		l.s, l.done = nil, nil
	}
	_ = l.m.Forget(l.id)
}

// Release ends the claim: the next claim of the session gets it.
func (l *Lease) Release() {
	l.once.Do(func() {
		l.d = nil
		if l.s != nil {
			l.done()
			l.s, l.done = nil, nil
			if l.m.maxLive < 0 || l.Err() != nil {
				// A lost claim's session may be continued elsewhere:
				// the next claim opens it from the store.
				_ = l.m.Forget(l.id)
			}
		}
		if l.sl != nil {
			l.sl.release()
		}
		l.unclaim()
	})
}

// unclaim hands this process's claim to the next caller.
func (l *Lease) unclaim() {
	l.m.mu.Lock()
	l.c.holder, l.c.long = "", false
	l.m.mu.Unlock()
	<-l.c.token
	l.m.leave(l)
}
