// Package memstore is an in-memory store.Store: nothing survives the
// process. It suits tests, single-process use and the hot tier of a
// tiered store in tests.
package memstore

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/internal/storeutil"
)

// Source is the Info.Source of blobs served by this store.
const Source = "memory"

// Options configures a Store.
type Options struct {
	// TTL, when positive, makes a blob expire TTL after its last Put.
	// Expired blobs behave as absent and are dropped lazily (when next
	// touched, or by List). Zero keeps blobs until deleted.
	TTL time.Duration
}

// Store keeps blobs in a map. It is safe for concurrent use by multiple
// goroutines; compare-and-set is exact because every operation holds one
// mutex. Data is copied on Put and on Get, so callers may reuse their
// slices.
type Store struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
}

type entry struct {
	data []byte
	info store.Info
}

// New returns an empty store.
func New(opts Options) *Store {
	return &Store{ttl: opts.TTL, entries: map[string]*entry{}}
}

var _ store.Store = (*Store)(nil)

// lookup returns the live entry under id, dropping it if it has expired.
// s.mu must be held.
func (s *Store) lookup(id string, now time.Time) *entry {
	e := s.entries[id]
	if e != nil && storeutil.Expired(e.info.Expires, now) {
		delete(s.entries, id)
		return nil
	}
	return e
}

func (s *Store) begin(ctx context.Context, id string) error {
	if err := store.CheckID(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return storeutil.Closed("memory")
	}
	return nil
}

// Get returns a copy of the blob under id, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (store.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, id); err != nil {
		return store.Object{}, err
	}
	e := s.lookup(id, storeutil.Now())
	if e == nil {
		return store.Object{}, storeutil.NotFound(id)
	}
	return store.Object{Data: clone(e.data), Info: e.info}, nil
}

// Put stores a copy of data under id if cond holds, else it returns
// store.ErrConflict.
func (s *Store) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, id); err != nil {
		return store.Info{}, err
	}
	now := storeutil.Now()
	old := s.lookup(id, now)
	if err := storeutil.Check(id, cond, old != nil, version(old)); err != nil {
		return store.Info{}, err
	}
	var prev *store.Info
	if old != nil {
		prev = &old.info
	}
	info := storeutil.NextInfo(id, data, now, s.ttl, Source, prev)
	s.entries[id] = &entry{data: clone(data), info: info}
	return info, nil
}

// Delete removes the blob under id; a missing id is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, id); err != nil {
		return err
	}
	delete(s.entries, id)
	return nil
}

// Stat returns the info of the blob under id, or store.ErrNotFound.
func (s *Store) Stat(ctx context.Context, id string) (store.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(ctx, id); err != nil {
		return store.Info{}, err
	}
	e := s.lookup(id, storeutil.Now())
	if e == nil {
		return store.Info{}, storeutil.NotFound(id)
	}
	return e.info, nil
}

// List returns the info of every live blob, sorted by id, and drops expired
// ones. Memory holds no damaged entries: it never returns a
// *store.UnreadableError.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed {
		return nil, storeutil.Closed("memory")
	}
	now := storeutil.Now()
	list := make([]store.Info, 0, len(s.entries))
	for id := range s.entries {
		if e := s.lookup(id, now); e != nil {
			list = append(list, e.info)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list, nil
}

// Len returns the number of entries held, expired ones not yet dropped
// included (for tests and metrics).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Backend names the backend in traces and metrics: Source.
func (s *Store) Backend() string { return Source }

// Close drops every blob; later calls fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.entries = map[string]*entry{}
	return nil
}

func clone(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

func version(e *entry) string {
	if e == nil {
		return ""
	}
	return e.info.Version
}
