// Package tiered combines a hot store (e.g. Redis) and a cold archive (e.g.
// S3) into one store.Store.
//
//   - Get reads the hot tier; on a miss it reads the archive and, when found
//     there, restores the blob into the hot tier.
//   - Put writes the hot tier only.
//   - A background archiver (Start/Stop) copies blobs that have not been
//     written for Options.ArchiveAfter from the hot tier into the archive.
//     It copies, it does not move: the hot tier's own expiry (Redis TTL)
//     evicts them later. Configure ArchiveAfter + Interval well below the
//     hot tier's TTL, or a blob could expire from the hot tier before it
//     was archived and a read would then find an older archived version.
//   - Delete deletes from both tiers, leaving a tombstone in the hot tier
//     (see below).
//   - Info.Source is "hot" when the hot tier served the blob and "archive"
//     when the archive did.
//
// # Versions across tiers
//
// Each tier gives a blob its own version on every write, so the tiered
// store cannot use them as its versions: a copy would change them. Instead
// it wraps every blob in a small envelope (magic "MTS1", a length-prefixed
// JSON header with the version, creation and modification times, size and
// SHA-256, then the data) and stores the envelope in the tiers. The
// tiered Version is the one in the envelope: copying a blob between tiers
// copies the envelope byte for byte, so the version a client read stays
// valid wherever the blob lives.
//
// Put with IfVersion or IfAbsent reads the current envelope (hot tier, else
// archive), checks the condition against the envelope's version, then writes
// the hot tier with a condition on the hot tier's own version (or IfAbsent
// when the blob is only archived or absent). If that tier-level condition
// fails, something changed the hot tier meanwhile: a writer (then the
// re-check reports ErrConflict) or a restore of the same envelope from the
// archive (then the retry succeeds). So compare-and-set is exactly as
// strong as the hot tier's: no lost updates across processes.
//
// One case the hot tier cannot tell: the blob was absent there when read
// (it lived only in the archive) and is absent again when written, because
// meanwhile another process wrote a newer version, which was archived and
// evicted from the hot tier. So a conditional Put, or a Get's restore,
// that wrote into an absent hot blob checks the archive afterwards: if it
// now holds another version, that version replaces the write in the hot
// tier (the Put fails with ErrConflict, the Get reads again). This closes
// the case but for a short window, while that check runs, in which a third
// process could build on the write it undoes; a hot tier whose TTL is well
// above ArchiveAfter + Interval, and which does not evict under memory
// pressure, never evicts a version that young, and never opens it.
//
// Reading an envelope header needs the blob itself. To keep Stat and the
// check in Put cheap, the store caches, per id and tier, the header that
// belongs to a tier version it has seen; a tier Stat then tells whether the
// cache is current. A miss costs one Get from the tier.
//
// # Deletion and tombstones
//
// Stores have no conditional delete, so a plain delete from both tiers
// could race with a copy between them: an archiver that read the blob
// just before a Delete would write it back into the archive, and a Get
// restoring it from the archive would write it back into the hot tier.
// And an archiver that finds the hot blob gone after copying it cannot tell
// a deletion from an expiry or an eviction (Redis under memory pressure),
// so it must not remove its copy on that ground: that could lose the only
// copy.
//
// So Delete first overwrites the hot blob with a tombstone (an envelope
// marked deleted), then deletes the archived copy. A tombstone reads as
// absent and stops reads from falling through to the archive; a Put
// replaces it like an absent blob. Restores write the hot tier with
// IfAbsent, which a tombstone refuses; an archiver that copied a blob
// re-checks the hot tier afterwards and, finding a tombstone, removes its
// copy; and archiver passes remove archived copies of tombstoned ids. A
// tombstone is a few dozen bytes that lives until the hot tier's TTL
// removes it (a hot tier without TTL keeps them).
package tiered

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/internal/storeutil"
)

// Sources reported in Info.Source.
const (
	SourceHot     = "hot"
	SourceArchive = "archive"
)

// Defaults for Options.
const (
	DefaultArchiveAfter = 30 * time.Minute
	DefaultInterval     = time.Minute
)

// Options configures a Store.
type Options struct {
	// Hot is read first and receives every Put. Required.
	Hot store.Store
	// Cold is the archive. Required.
	Cold store.Store
	// ArchiveAfter is how long a blob must have gone without a write to the
	// hot tier before the archiver copies it; DefaultArchiveAfter when zero.
	ArchiveAfter time.Duration
	// Interval between archiver passes; DefaultInterval when zero.
	Interval time.Duration
	// Logf, when set, receives archiver errors (which otherwise only count
	// in Stats).
	Logf func(format string, args ...any)
}

// Store is the tiered store. It is safe for concurrent use by multiple
// goroutines and, when both tiers are, by multiple processes; several
// processes may run archivers on the same tiers.
type Store struct {
	hot, cold    store.Store
	archiveAfter time.Duration
	interval     time.Duration
	logf         func(string, ...any)

	cacheMu sync.Mutex
	cache   map[cacheKey]cacheEntry
	done    map[string]string // id -> hot tier version archived by this process

	runMu   sync.Mutex
	stop    chan struct{}
	stopped chan struct{}

	statsMu sync.Mutex
	stats   Stats
}

// Stats counts what the store did since it was created.
type Stats struct {
	Archived      int // blobs copied into the archive
	Restored      int // blobs copied from the archive back into the hot tier
	Passes        int // archiver passes run
	ArchiveErrors int // failed archiver steps
}

type cacheKey struct {
	id   string
	cold bool
}

type cacheEntry struct {
	tierVersion string
	env         envelope
}

const maxCache = 100_000

var _ store.Store = (*Store)(nil)

// New returns a tiered store over opts.Hot and opts.Cold. The archiver does
// not run until Start.
func New(opts Options) (*Store, error) {
	if opts.Hot == nil || opts.Cold == nil {
		return nil, errors.New("tiered: Hot and Cold stores are required")
	}
	s := &Store{
		hot:          opts.Hot,
		cold:         opts.Cold,
		archiveAfter: opts.ArchiveAfter,
		interval:     opts.Interval,
		logf:         opts.Logf,
		cache:        map[cacheKey]cacheEntry{},
		done:         map[string]string{},
	}
	if s.archiveAfter <= 0 {
		s.archiveAfter = DefaultArchiveAfter
	}
	if s.interval <= 0 {
		s.interval = DefaultInterval
	}
	return s, nil
}

// --- envelope ---------------------------------------------------------------

const magic = "MTS1"

// envelope is the header stored before the data in each tier.
type envelope struct {
	Version  string `json:"v"`
	Created  int64  `json:"c"`
	Modified int64  `json:"m"`
	Size     int64  `json:"n"`
	SHA256   string `json:"s"`
	// Deleted marks a tombstone (see the package documentation).
	Deleted bool `json:"d,omitempty"`
}

func encode(env envelope, data []byte) []byte {
	hdr, _ := json.Marshal(env) // cannot fail
	b := make([]byte, 0, len(magic)+binary.MaxVarintLen64+len(hdr)+len(data))
	b = append(b, magic...)
	b = binary.AppendUvarint(b, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, data...)
}

func decode(id string, blob []byte) (envelope, []byte, error) {
	bad := func(why string) error {
		return storeutil.Unreadable("tiered: blob %q is not a tiered-store envelope (%s): was it written by another kind of store sharing the tier? (delete it)",
			id, why)
	}
	rest, ok := bytes.CutPrefix(blob, []byte(magic))
	if !ok {
		return envelope{}, nil, bad("no magic")
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return envelope{}, nil, bad("bad header length")
	}
	var env envelope
	if err := json.Unmarshal(rest[k:k+int(n)], &env); err != nil {
		return envelope{}, nil, bad(err.Error())
	}
	data := rest[k+int(n):]
	if int64(len(data)) != env.Size {
		return envelope{}, nil, bad("size mismatch")
	}
	return env, data, nil
}

func (env envelope) info(id string, tier store.Info, source string) store.Info {
	return store.Info{
		ID:       id,
		Size:     env.Size,
		SHA256:   env.SHA256,
		Version:  env.Version,
		Created:  storeutil.FromUnixNano(env.Created),
		Modified: storeutil.FromUnixNano(env.Modified),
		Expires:  tier.Expires,
		Source:   source,
	}
}

// Tiers returns the hot and cold stores, for health checks and
// diagnostics. Blobs written to them directly are not tiered envelopes:
// the tiered store reports them as unreadable.
func (s *Store) Tiers() (hot, cold store.Store) { return s.hot, s.cold }

// ArchiveAfter returns how long a blob goes without a write before the
// archiver copies it, and the time between archiver passes (the defaults
// applied).
func (s *Store) ArchiveAfter() (after, interval time.Duration) { return s.archiveAfter, s.interval }

// --- tier access with the header cache ----------------------------------

func (s *Store) tier(cold bool) store.Store {
	if cold {
		return s.cold
	}
	return s.hot
}

func (s *Store) remember(id string, cold bool, tierVersion string, env envelope) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if len(s.cache) >= maxCache {
		clear(s.cache)
	}
	s.cache[cacheKey{id, cold}] = cacheEntry{tierVersion, env}
}

func (s *Store) forgetCold(id string) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	delete(s.cache, cacheKey{id, true})
}

func (s *Store) cached(id string, cold bool, tierVersion string) (envelope, bool) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	e, ok := s.cache[cacheKey{id, cold}]
	return e.env, ok && e.tierVersion == tierVersion
}

// read gets and decodes the blob from one tier.
func (s *Store) read(ctx context.Context, id string, cold bool) (envelope, []byte, store.Info, error) {
	obj, err := s.tier(cold).Get(ctx, id)
	if err != nil {
		return envelope{}, nil, store.Info{}, err
	}
	env, data, err := decode(id, obj.Data)
	if err != nil {
		return envelope{}, nil, store.Info{}, err
	}
	s.remember(id, cold, obj.Info.Version, env)
	return env, data, obj.Info, nil
}

// head returns the envelope header of the blob in one tier, from the cache
// when the tier version matches, else by reading the blob.
func (s *Store) head(ctx context.Context, id string, cold bool) (envelope, store.Info, error) {
	tinfo, err := s.tier(cold).Stat(ctx, id)
	if err != nil {
		return envelope{}, store.Info{}, err
	}
	if env, ok := s.cached(id, cold, tinfo.Version); ok {
		return env, tinfo, nil
	}
	env, _, tinfo, err := s.read(ctx, id, cold)
	return env, tinfo, err
}

// --- Store ----------------------------------------------------------------

// Get returns the blob under id from the hot tier or, on a miss, from the
// archive, restoring it into the hot tier (Info.Source "archive").
func (s *Store) Get(ctx context.Context, id string) (store.Object, error) {
	if err := store.CheckID(id); err != nil {
		return store.Object{}, err
	}
	for attempt := 0; ; attempt++ {
		env, data, tinfo, err := s.read(ctx, id, false)
		if err == nil && env.Deleted {
			return store.Object{}, storeutil.NotFound(id)
		}
		if err == nil {
			return store.Object{Data: data, Info: env.info(id, tinfo, SourceHot)}, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.Object{}, err
		}
		obj, err := s.cold.Get(ctx, id)
		if err != nil {
			return store.Object{}, err
		}
		env, data, err = decode(id, obj.Data)
		if err != nil {
			return store.Object{}, err
		}
		s.remember(id, true, obj.Info.Version, env)
		hinfo, err := s.hot.Put(ctx, id, obj.Data, store.Cond{IfAbsent: true})
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue // written, restored or deleted by someone else meanwhile: read that
		}
		if err == nil && attempt < 3 {
			if moved, _ := s.archiveMoved(ctx, id, env.Version, env.Version, hinfo.Version); moved {
				continue // a newer version was archived meanwhile: read that
			}
		}
		if err == nil {
			s.remember(id, false, hinfo.Version, env)
			s.count(func(st *Stats) { st.Restored++ })
		} else {
			// The hot tier is failing: still serve the archived copy.
			s.log("tiered: restoring %q into the hot tier: %v", id, err)
			hinfo = obj.Info
		}
		return store.Object{Data: data, Info: env.info(id, hinfo, SourceArchive)}, nil
	}
}

// archiveMoved is the check after a write into the hot tier where the
// blob was absent, of version ours, based on what the archive held then
// (version base, "" for nothing). Had a newer version been written,
// archived and evicted from the hot tier since the archive was read, the
// hot tier's absence would not have told. So when the archive now holds
// neither base nor ours, that version goes back into the hot tier in place
// of our write, if the hot tier still holds it (tierVersion), and
// archiveMoved reports true: our write is undone. Once the hot tier has
// moved on from our write, others built on it: it stands. An archive that
// holds nothing now was emptied by a Delete, whose tombstone replaces our
// write.
func (s *Store) archiveMoved(ctx context.Context, id, base, ours, tierVersion string) (bool, error) {
	env, _, err := s.head(ctx, id, true)
	if errors.Is(err, store.ErrNotFound) || err == nil && (env.Version == base || env.Version == ours) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	obj, err := s.cold.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	_, err = s.hot.Put(ctx, id, obj.Data, store.Cond{IfVersion: tierVersion})
	switch {
	case errors.Is(err, store.ErrConflict):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Stat returns the info of the blob under id, from the hot tier or else the
// archive (without restoring it).
func (s *Store) Stat(ctx context.Context, id string) (store.Info, error) {
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	env, tinfo, err := s.head(ctx, id, false)
	if err == nil && env.Deleted {
		return store.Info{}, storeutil.NotFound(id)
	}
	if err == nil {
		return env.info(id, tinfo, SourceHot), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Info{}, err
	}
	env, tinfo, err = s.head(ctx, id, true)
	if err != nil {
		return store.Info{}, err
	}
	return env.info(id, tinfo, SourceArchive), nil
}

// Put writes data to the hot tier if cond holds against the blob's tiered
// version (wherever it lives), else it returns store.ErrConflict. See the
// package documentation.
func (s *Store) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	for attempt := 0; ; attempt++ {
		var (
			cur      envelope
			exists   bool
			tierCond = store.Cond{IfAbsent: true}
			fromCold = false // cur was read from the archive (or from nowhere)
		)
		env, tinfo, err := s.head(ctx, id, false)
		switch {
		case err == nil:
			cur, exists = env, !env.Deleted
			tierCond = store.Cond{IfVersion: tinfo.Version}
		case !errors.Is(err, store.ErrNotFound):
			return store.Info{}, err
		default:
			fromCold = true
			env, _, err := s.head(ctx, id, true)
			switch {
			case err == nil:
				cur, exists = env, true
			case !errors.Is(err, store.ErrNotFound):
				return store.Info{}, err
			}
		}
		if err := storeutil.Check(id, cond, exists, cur.Version); err != nil {
			return store.Info{}, err
		}
		now := storeutil.Now()
		next := envelope{
			Version:  storeutil.NewVersion(),
			Created:  now.UnixNano(),
			Modified: now.UnixNano(),
			Size:     int64(len(data)),
			SHA256:   store.Checksum(data),
		}
		if exists {
			next.Created = cur.Created
		}
		if cur.Modified != 0 {
			next.Modified = max(next.Modified, cur.Modified+1)
		}
		if cond == (store.Cond{}) && attempt >= 3 {
			tierCond = store.Cond{} // unconditional Put under heavy contention: just write
		}
		hinfo, err := s.hot.Put(ctx, id, encode(next, data), tierCond)
		if err == nil && fromCold && cond != (store.Cond{}) {
			// cond held against the archive; it still must, or a newer
			// version was archived and left the hot tier meanwhile.
			var base string
			if exists {
				base = cur.Version
			}
			moved, err := s.archiveMoved(ctx, id, base, next.Version, hinfo.Version)
			if err != nil {
				return store.Info{}, fmt.Errorf("tiered: checking the archive after writing %q: %w", id, err)
			}
			if moved {
				return store.Info{}, fmt.Errorf("%w: tiered: %q was updated, archived and evicted from the hot tier meanwhile", store.ErrConflict, id)
			}
		}
		if err == nil {
			s.remember(id, false, hinfo.Version, next)
			return next.info(id, hinfo, SourceHot), nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return store.Info{}, err
		}
		// The hot tier changed under us: re-evaluate cond against what is
		// there now (a restore keeps the version, a write changes it).
		if attempt >= 20 {
			return store.Info{}, err
		}
	}
}

// Delete removes the blob from both tiers, leaving a tombstone in the hot
// tier (see the package documentation); a missing id is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := store.CheckID(id); err != nil {
		return err
	}
	now := storeutil.Now()
	tomb := envelope{
		Version:  storeutil.NewVersion(),
		Created:  now.UnixNano(),
		Modified: now.UnixNano(),
		SHA256:   store.Checksum(nil),
		Deleted:  true,
	}
	hinfo, err := s.hot.Put(ctx, id, encode(tomb, nil), store.Cond{})
	if err != nil {
		return err
	}
	s.remember(id, false, hinfo.Version, tomb)
	s.forgetCold(id)
	return s.cold.Delete(ctx, id)
}

// List returns the info of every blob in either tier, sorted by id; a blob
// in both is reported as the hot tier has it. Blobs whose envelope header
// this process has not cached are read in full, so a first List of a large
// archive transfers all of it.
//
// Entries that either tier skips as unreadable, and blobs that are not
// envelopes or fail their tier's checks when read, are skipped and reported
// in a *store.UnreadableError returned with the readable entries (each
// Skipped.Err names the tier). An id that is unreadable in the hot tier is
// not listed from the archive either: Get would fail on the hot copy. A
// failure of either tier's List, or of a read for another reason than
// damage, fails the whole call.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	hot, err := s.hot.List(ctx)
	hotSkipped, err := store.SplitListError(err)
	if err != nil {
		return nil, err
	}
	cold, err := s.cold.List(ctx)
	coldSkipped, err := store.SplitListError(err)
	if err != nil {
		return nil, err
	}
	list := []store.Info{}
	seen := map[string]bool{}
	var skipped []store.Skipped
	skip := func(sks []store.Skipped, source string) {
		for _, sk := range sks {
			if sk.ID != "" && seen[sk.ID] {
				continue
			}
			if sk.ID != "" {
				seen[sk.ID] = true
			}
			sk.Err = fmt.Errorf("%s tier: %w", source, sk.Err)
			skipped = append(skipped, sk)
		}
	}
	add := func(infos []store.Info, cold bool, source string) error {
		for _, tinfo := range infos {
			if seen[tinfo.ID] {
				continue
			}
			env, ok := s.cached(tinfo.ID, cold, tinfo.Version)
			if !ok {
				var err error
				id := tinfo.ID
				env, _, tinfo, err = s.read(ctx, id, cold)
				if errors.Is(err, store.ErrNotFound) {
					continue // deleted or expired meanwhile
				}
				if errors.Is(err, store.ErrUnreadable) {
					skip([]store.Skipped{{ID: id, Key: id, Err: err}}, source)
					continue
				}
				if err != nil {
					return err
				}
			}
			seen[tinfo.ID] = true
			if !env.Deleted {
				list = append(list, env.info(tinfo.ID, tinfo, source))
			}
		}
		return nil
	}
	skip(hotSkipped, SourceHot)
	if err := add(hot, false, SourceHot); err != nil {
		return nil, err
	}
	skip(coldSkipped, SourceArchive)
	if err := add(cold, true, SourceArchive); err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list, store.NewUnreadableError(skipped)
}

// Backend names the backend in traces and metrics: "tiered" (Info.Source
// says which tier served a read).
func (s *Store) Backend() string { return "tiered" }

// Close stops the archiver and closes both tiers.
func (s *Store) Close() error {
	s.Stop()
	return errors.Join(s.hot.Close(), s.cold.Close())
}

// --- archiver ---------------------------------------------------------------

// Start runs the archiver in the background: a pass every Interval until
// Stop. Starting a running archiver does nothing.
func (s *Store) Start() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.stop != nil {
		return
	}
	s.stop, s.stopped = make(chan struct{}), make(chan struct{})
	go s.run(s.stop, s.stopped)
}

// Stop stops the archiver and waits for a running pass to end. Stopping a
// stopped archiver does nothing.
func (s *Store) Stop() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.stopped
	s.stop, s.stopped = nil, nil
}

func (s *Store) run(stop, stopped chan struct{}) {
	defer close(stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		_, _ = s.ArchiveOnce(ctx) // it logs its errors
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// ArchiveOnce runs one archiver pass: it copies into the archive every hot
// blob last written more than ArchiveAfter ago whose version the archive
// does not hold yet, removes archived copies of deleted blobs, and returns
// how many blobs it copied. Errors on single blobs are counted, logged (see
// Options.Logf) and returned joined; the pass goes on. So are the entries
// the hot tier's List skips as unreadable: the *store.UnreadableError is
// among the joined errors (errors.Is(err, store.ErrUnreadable) holds). A
// failure of the hot tier's List ends the pass.
func (s *Store) ArchiveOnce(ctx context.Context) (int, error) {
	s.count(func(st *Stats) { st.Passes++ })
	hot, listErr := s.hot.List(ctx)
	skipped, err := store.SplitListError(listErr)
	if err != nil {
		if ctx.Err() == nil {
			s.count(func(st *Stats) { st.ArchiveErrors++ })
			s.log("tiered: archiver: listing the hot tier: %v", err)
		}
		return 0, err
	}
	var errs []error
	if len(skipped) > 0 {
		for _, sk := range skipped {
			s.count(func(st *Stats) { st.ArchiveErrors++ })
			s.log("tiered: archiver: skipping %s in the hot tier: %v", sk.Name(), sk.Err)
		}
		errs = append(errs, listErr)
	}
	cutoff := storeutil.Now().Add(-s.archiveAfter)
	n := 0
	for _, tinfo := range hot {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if tinfo.Modified.After(cutoff) || store.IsLease(tinfo.ID) {
			continue // a lease lives and dies in the hot tier
		}
		copied, err := s.archive(ctx, tinfo.ID, tinfo.Version)
		if err != nil && ctx.Err() != nil {
			return n, ctx.Err() // stopped
		}
		if err != nil {
			s.count(func(st *Stats) { st.ArchiveErrors++ })
			s.log("tiered: archiving %q: %v", tinfo.ID, err)
			errs = append(errs, err)
			continue
		}
		if copied {
			n++
			s.count(func(st *Stats) { st.Archived++ })
		}
	}
	return n, errors.Join(errs...)
}

// archive copies the hot blob of id into the archive unless the archive
// already holds its version; for a tombstone it removes the archived copy.
// tierVersion is the hot tier's version from the listing: versions already
// handled by this process are skipped without asking the archive.
func (s *Store) archive(ctx context.Context, id, tierVersion string) (bool, error) {
	if s.handled(id, tierVersion) {
		return false, nil
	}
	obj, err := s.hot.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil // expired or evicted meanwhile
	}
	if err != nil {
		return false, err
	}
	env, _, err := decode(id, obj.Data)
	if err != nil {
		return false, err
	}
	s.remember(id, false, obj.Info.Version, env)
	if env.Deleted {
		// Remove a copy that an archiver wrote back while the Delete ran.
		_, err := s.cold.Stat(ctx, id)
		if err == nil {
			err = s.cold.Delete(ctx, id)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		s.markHandled(id, obj.Info.Version)
		return false, nil
	}
	cond := store.Cond{IfAbsent: true}
	cenv, cinfo, err := s.head(ctx, id, true)
	switch {
	case err == nil && cenv.Version == env.Version:
		s.markHandled(id, obj.Info.Version)
		return false, nil // archived already
	case err == nil && cenv.Modified > env.Modified:
		return false, nil // another archiver copied a newer version meanwhile
	case err == nil:
		cond = store.Cond{IfVersion: cinfo.Version}
	case !errors.Is(err, store.ErrNotFound):
		return false, err
	}
	cput, err := s.cold.Put(ctx, id, obj.Data, cond)
	if errors.Is(err, store.ErrConflict) {
		return false, nil // another archiver was faster; the next pass looks again
	}
	if err != nil {
		return false, err
	}
	s.remember(id, true, cput.Version, env)
	// A Delete may have run between our read of the hot tier and our write
	// to the archive: then the hot tier holds its tombstone, and our copy
	// must go (unless something replaced it meanwhile). A hot blob that is
	// simply gone expired or was evicted: our copy is now the only one.
	if henv, _, err := s.head(ctx, id, false); err == nil && henv.Deleted {
		if cur, err := s.cold.Stat(ctx, id); err == nil && cur.Version == cput.Version {
			_ = s.cold.Delete(ctx, id)
		}
		return false, nil
	}
	s.markHandled(id, obj.Info.Version)
	return true, nil
}

// handled reports whether this process already archived (or, for a
// tombstone, cleaned up) the hot tier version tierVersion of id.
func (s *Store) handled(id, tierVersion string) bool {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	return s.done[id] == tierVersion
}

func (s *Store) markHandled(id, tierVersion string) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if len(s.done) >= maxCache {
		clear(s.done)
	}
	s.done[id] = tierVersion
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}

func (s *Store) count(f func(*Stats)) {
	s.statsMu.Lock()
	f(&s.stats)
	s.statsMu.Unlock()
}

func (s *Store) log(format string, args ...any) {
	if s.logf != nil {
		s.logf(format, args...)
	}
}
