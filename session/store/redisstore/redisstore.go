// Package redisstore is a store.Store in Redis: the hot tier for servers
// that run several processes or machines.
//
// Each blob is one Redis hash at Prefix+id holding the data and its
// metadata (fields d: data, v: version, c/m/e: created, modified and expiry
// times in Unix microseconds, s: SHA-256, n: size), so a read sees data and
// metadata of the same write. The key expires TTL after the last Put
// (Redis drops it by itself). Put runs a Lua script that checks the
// condition and writes in one atomic step, so compare-and-set holds across
// any number of clients. Versions are random tokens, never reused.
//
// It uses github.com/redis/go-redis/v9: the maintained official client, with
// connection pooling, context support and server-side scripting.
package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/internal/storeutil"
)

// Source is the Info.Source of blobs served by this store.
const Source = "redis"

// DefaultTTL is the time to live of a blob after its last Put when
// Options.TTL is zero.
const DefaultTTL = 2 * time.Hour

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "monty:session:"

// Options configures a Store.
type Options struct {
	// URL of the server: redis://[user:password@]host:port/db, or rediss://
	// for TLS. Pool settings may be given as query parameters (see
	// redis.ParseURL).
	URL string
	// Prefix is prepended to every id to form its key; DefaultPrefix when
	// empty. Stores with different prefixes do not see each other's blobs.
	Prefix string
	// TTL is how long a blob lives after its last Put: DefaultTTL when
	// zero, forever when negative.
	TTL time.Duration
	// Timeout bounds each call to the server (Get, Put, Stat, Delete),
	// its retries included: past it the call fails with
	// store.ErrUnavailable, so that a server that stops answering (a
	// network partition that drops packets) fails requests instead of
	// holding them. DefaultTimeout when zero.
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout when it is zero.
const DefaultTimeout = 5 * time.Second

// errNoAnswer is the cause of a call that Options.Timeout ended.
var errNoAnswer = errors.New("redisstore: no answer in time")

// Store keeps blobs in Redis. It is safe for concurrent use by multiple
// goroutines and by any number of processes sharing the server.
type Store struct {
	rdb     *redis.Client
	prefix  string
	ttl     time.Duration
	timeout time.Duration
	addr    string // for error messages, without credentials
}

var _ store.Store = (*Store)(nil)

// New connects to the server at opts.URL and checks that it answers.
func New(ctx context.Context, opts Options) (*Store, error) {
	if opts.URL == "" {
		return nil, fmt.Errorf("%w: redisstore: no URL given (want redis://host:port/db)", store.ErrUnavailable)
	}
	ropts, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: redisstore: bad URL: %v (want redis://host:port/db)", store.ErrUnavailable, err)
	}
	// Deadlines of the callers' contexts (and Timeout's) bound the
	// client's reads and writes, not only its own timeouts.
	ropts.ContextTimeoutEnabled = true
	s := &Store{
		rdb:     redis.NewClient(ropts),
		prefix:  opts.Prefix,
		ttl:     opts.TTL,
		timeout: cmp.Or(opts.Timeout, DefaultTimeout),
		addr:    ropts.Addr,
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		_ = s.rdb.Close()
		return nil, s.unavailable(ctx, "ping", err)
	}
	return s, nil
}

// Client returns the underlying client (for tests and diagnostics).
func (s *Store) Client() *redis.Client { return s.rdb }

// Prefix returns the key prefix in use.
func (s *Store) Prefix() string { return s.prefix }

// unavailable is the error of operation op that failed with err under
// ctx: store.ErrUnavailable, unless the caller's context ended (the
// store's own Timeout ending the call is unavailability too).
func (s *Store) unavailable(ctx context.Context, op string, err error) error {
	if errors.Is(context.Cause(ctx), errNoAnswer) {
		err = fmt.Errorf("no answer within %s", s.timeout)
	} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return fmt.Errorf("%w: redisstore: %s on %s: %v (check that Redis is running and reachable at that address)",
		store.ErrUnavailable, op, s.addr, err)
}

func (s *Store) key(id string) string { return s.prefix + id }

// bound is ctx for one call to the server, ended by Options.Timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.timeout, errNoAnswer)
}

// Fields of the hash.
const (
	fData     = "d"
	fVersion  = "v"
	fCreated  = "c"
	fModified = "m"
	fExpires  = "e"
	fSHA      = "s"
	fSize     = "n"
)

// putScript checks the condition and writes the hash in one step.
// KEYS[1]: key. ARGV: mode ("", "absent" or "version"), expected version,
// new version, now (Unix µs), TTL (ms, 0 for none), data, SHA-256, size.
// It returns {0, reason} when the condition fails, else {1, created,
// modified, expires} (µs as decimal strings; expires "0" when none).
// Times are microseconds so that Lua's doubles hold them exactly.
var putScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'v', 'c', 'm', 'e')
local exists = cur[1] ~= false
if exists and cur[1] == ARGV[3] then
  -- This very write, run again (the client retried a call whose reply
  -- was lost): it is stored already.
  return {1, cur[2], cur[3], cur[4]}
end
if ARGV[1] == 'absent' and exists then return {0, 'exists'} end
if ARGV[1] == 'version' then
  if not exists then return {0, 'missing'} end
  if cur[1] ~= ARGV[2] then return {0, 'changed'} end
end
local now = tonumber(ARGV[4])
local created, modified = now, now
if exists then
  created = tonumber(cur[2]) or now
  local old = tonumber(cur[3]) or 0
  if modified <= old then modified = old + 1 end
end
local ttl = tonumber(ARGV[5])
local expires = 0
if ttl > 0 then expires = modified + ttl * 1000 end
local c, m, e = string.format('%.0f', created), string.format('%.0f', modified), string.format('%.0f', expires)
redis.call('HSET', KEYS[1], 'd', ARGV[6], 'v', ARGV[3], 'c', c, 'm', m, 'e', e, 's', ARGV[7], 'n', ARGV[8])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
return {1, c, m, e}
`)

// Put stores data under id if cond holds, else it returns store.ErrConflict.
// It (re)sets the key's expiry.
func (s *Store) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	mode := ""
	switch {
	case cond.IfAbsent && cond.IfVersion != "":
		return store.Info{}, storeutil.Conflict(id, "IfAbsent and IfVersion cannot both hold")
	case cond.IfAbsent:
		mode = "absent"
	case cond.IfVersion != "":
		mode = "version"
	}
	ttlMS := int64(0)
	if s.ttl > 0 {
		ttlMS = max(s.ttl.Milliseconds(), 1)
	}
	version := storeutil.NewVersion()
	sum := store.Checksum(data)
	now := time.Now().UnixMicro()
	res, err := putScript.Run(ctx, s.rdb, []string{s.key(id)},
		mode, cond.IfVersion, version, now, ttlMS, data, sum, len(data)).Slice()
	if err != nil {
		return store.Info{}, s.unavailable(ctx, "put", err)
	}
	if len(res) < 2 {
		return store.Info{}, s.unavailable(ctx, "put", fmt.Errorf("unexpected script result %v", res))
	}
	if ok, _ := res[0].(int64); ok == 0 {
		why, _ := res[1].(string) // "exists", "missing" or "changed"
		return store.Info{}, storeutil.Check(id, cond, why != "missing", "")
	}
	if len(res) != 4 {
		return store.Info{}, s.unavailable(ctx, "put", fmt.Errorf("unexpected script result %v", res))
	}
	str := func(v any) string { x, _ := v.(string); return x }
	return store.Info{
		ID:       id,
		Size:     int64(len(data)),
		SHA256:   sum,
		Version:  version,
		Created:  micros(str(res[1])),
		Modified: micros(str(res[2])),
		Expires:  micros(str(res[3])),
		Source:   Source,
	}, nil
}

func micros(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

// info builds an Info from HMGET values of version, created, modified,
// expires, sha, size. ok is false when none of the fields is set (no such
// key, or expired). Fields that are missing or garbled (a hash written by
// something else) yield a store.ErrUnreadable error naming key.
func info(id, key string, vals []any) (inf store.Info, ok bool, err error) {
	str := func(i int) string { x, _ := vals[i].(string); return x }
	if !slices.ContainsFunc(vals, func(v any) bool { return v != nil }) {
		return store.Info{}, false, nil
	}
	bad := func(why string) (store.Info, bool, error) {
		return store.Info{}, true, storeutil.Unreadable(
			"redisstore: key %s holds a hash with %s (damaged, or not written by this store: delete it, or use another Prefix)", key, why)
	}
	num := func(i int, min int64) (int64, bool) {
		n, err := strconv.ParseInt(str(i), 10, 64)
		return n, err == nil && n >= min
	}
	created, okC := num(1, 1)
	modified, okM := num(2, 1)
	_, okE := num(3, 0)
	size, okN := num(5, 0)
	switch {
	case str(0) == "":
		return bad("no version (field " + fVersion + ")")
	case !okC || !okM || !okE:
		return bad(fmt.Sprintf("garbled times (fields %s, %s, %s: %q, %q, %q)",
			fCreated, fModified, fExpires, str(1), str(2), str(3)))
	case !storeutil.IsHex(str(4), 64):
		return bad(fmt.Sprintf("a garbled checksum (field %s: %q)", fSHA, str(4)))
	case !okN:
		return bad(fmt.Sprintf("a garbled size (field %s: %q)", fSize, str(5)))
	}
	return store.Info{
		ID:       id,
		Size:     size,
		SHA256:   str(4),
		Version:  str(0),
		Created:  time.UnixMicro(created).UTC(),
		Modified: time.UnixMicro(modified).UTC(),
		Expires:  micros(str(3)),
		Source:   Source,
	}, true, nil
}

// wrongType is the error for a key under the prefix that is not a hash.
func wrongType(key, typ string) error {
	return storeutil.Unreadable("redisstore: key %s holds a %s, not a hash (not written by this store: delete it, or use another Prefix)", key, typ)
}

// readErr is the error of a read of key that failed with err: a key of
// another type is an unreadable entry, anything else an outage.
func (s *Store) readErr(ctx context.Context, op, key string, err error) error {
	if isWrongType(err) {
		typ, terr := s.rdb.Type(ctx, key).Result()
		if terr != nil {
			typ = "value of another type"
		}
		return wrongType(key, typ)
	}
	return s.unavailable(ctx, op, err)
}

var metaFields = []string{fVersion, fCreated, fModified, fExpires, fSHA, fSize}

// Get returns the blob under id, or store.ErrNotFound. Data and metadata come
// from one HMGET, so they belong to the same write.
func (s *Store) Get(ctx context.Context, id string) (store.Object, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := store.CheckID(id); err != nil {
		return store.Object{}, err
	}
	key := s.key(id)
	vals, err := s.rdb.HMGet(ctx, key, append(metaFields, fData)...).Result()
	if err != nil {
		return store.Object{}, s.readErr(ctx, "get", key, err)
	}
	inf, ok, err := info(id, key, vals[:len(metaFields)])
	if err != nil {
		return store.Object{}, err
	}
	if !ok {
		return store.Object{}, storeutil.NotFound(id)
	}
	data, _ := vals[len(metaFields)].(string)
	if int64(len(data)) != inf.Size {
		return store.Object{}, storeutil.Unreadable("redisstore: key %s holds %d bytes of data, its size field says %d (delete it)",
			key, len(data), inf.Size)
	}
	return store.Object{Data: []byte(data), Info: inf}, nil
}

// Stat returns the info of the blob under id, or store.ErrNotFound, without
// transferring the data.
func (s *Store) Stat(ctx context.Context, id string) (store.Info, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	key := s.key(id)
	vals, err := s.rdb.HMGet(ctx, key, metaFields...).Result()
	if err != nil {
		return store.Info{}, s.readErr(ctx, "stat", key, err)
	}
	inf, ok, err := info(id, key, vals)
	if err != nil {
		return store.Info{}, err
	}
	if !ok {
		return store.Info{}, storeutil.NotFound(id)
	}
	return inf, nil
}

// Delete removes the blob under id; a missing id is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := store.CheckID(id); err != nil {
		return err
	}
	if err := s.rdb.Del(ctx, s.key(id)).Err(); err != nil {
		return s.unavailable(ctx, "delete", err)
	}
	return nil
}

// List returns the info of every blob under the prefix, sorted by id. It
// walks the keys with SCAN (never blocking the server) and fetches their
// types and metadata in batches, each in one MULTI/EXEC transaction (so a
// key that expires meanwhile is seen either whole or gone). Keys under the
// prefix that are not valid ids are ignored. Keys with a valid id that hold
// another type than a hash, or a hash whose metadata fields are missing or
// garbled (what Stat refuses), are skipped and reported in a
// *store.UnreadableError returned with the readable entries; like Stat, List
// does not read the data (Get checks its length). A failure to reach the
// server fails the whole call.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	var keys []string
	iter := s.rdb.Scan(ctx, 0, globEscape(s.prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, s.unavailable(ctx, "list (SCAN)", err)
	}
	sort.Strings(keys)
	keys = dedupe(keys) // SCAN may return a key twice
	keys = slices.DeleteFunc(keys, func(k string) bool { return store.CheckID(strings.TrimPrefix(k, s.prefix)) != nil })
	list := []store.Info{}
	var skipped []store.Skipped
	const batch = 500
	type cmds struct {
		typ  *redis.StatusCmd
		meta *redis.SliceCmd
	}
	for start := 0; start < len(keys); start += batch {
		chunk := keys[start:min(start+batch, len(keys))]
		cs := make([]cmds, len(chunk))
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range chunk {
				cs[i] = cmds{p.Type(ctx, k), p.HMGet(ctx, k, metaFields...)}
			}
			return nil
		})
		if err != nil && !isWrongType(err) {
			return nil, s.unavailable(ctx, "list (TYPE, HMGET)", err)
		}
		for i, k := range chunk {
			id := strings.TrimPrefix(k, s.prefix)
			typ, err := cs[i].typ.Result()
			if err != nil {
				return nil, s.unavailable(ctx, "list (TYPE)", err)
			}
			switch typ {
			case "none":
				continue // deleted or expired meanwhile
			case "hash":
			default:
				skipped = append(skipped, store.Skipped{ID: id, Key: k, Err: wrongType(k, typ)})
				continue
			}
			vals, err := cs[i].meta.Result()
			if err != nil {
				return nil, s.unavailable(ctx, "list (HMGET)", err)
			}
			inf, ok, err := info(id, k, vals)
			if err == nil && !ok { // Stat would say "not found": List knows the key exists
				err = storeutil.Unreadable("redisstore: key %s holds a hash without this store's fields (not written by this store: delete it, or use another Prefix)", k)
			}
			if err != nil {
				skipped = append(skipped, store.Skipped{ID: id, Key: k, Err: err})
				continue
			}
			list = append(list, inf)
		}
	}
	return list, store.NewUnreadableError(skipped)
}

func isWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, k := range sorted {
		if i == 0 || k != sorted[i-1] {
			out = append(out, k)
		}
	}
	return out
}

// globEscape escapes the glob characters of a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Backend names the backend in traces and metrics: Source.
func (s *Store) Backend() string { return Source }

// Close closes the connection pool.
func (s *Store) Close() error {
	return s.rdb.Close()
}
