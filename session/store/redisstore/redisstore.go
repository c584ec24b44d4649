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
	"context"
	"errors"
	"fmt"
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
}

// Store keeps blobs in Redis. It is safe for concurrent use by multiple
// goroutines and by any number of processes sharing the server.
type Store struct {
	rdb    *redis.Client
	prefix string
	ttl    time.Duration
	addr   string // for error messages, without credentials
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
	s := &Store{
		rdb:    redis.NewClient(ropts),
		prefix: opts.Prefix,
		ttl:    opts.TTL,
		addr:   ropts.Addr,
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		_ = s.rdb.Close()
		return nil, s.unavailable("ping", err)
	}
	return s, nil
}

// Client returns the underlying client (for tests and diagnostics).
func (s *Store) Client() *redis.Client { return s.rdb }

// Prefix returns the key prefix in use.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) unavailable(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return fmt.Errorf("%w: redisstore: %s on %s: %v (check that Redis is running and reachable at that address)",
		store.ErrUnavailable, op, s.addr, err)
}

func (s *Store) key(id string) string { return s.prefix + id }

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
local cur = redis.call('HMGET', KEYS[1], 'v', 'c', 'm')
local exists = cur[1] ~= false
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
		return store.Info{}, s.unavailable("put", err)
	}
	if len(res) < 2 {
		return store.Info{}, s.unavailable("put", fmt.Errorf("unexpected script result %v", res))
	}
	if ok, _ := res[0].(int64); ok == 0 {
		why, _ := res[1].(string) // "exists", "missing" or "changed"
		return store.Info{}, storeutil.Check(id, cond, why != "missing", "")
	}
	if len(res) != 4 {
		return store.Info{}, s.unavailable("put", fmt.Errorf("unexpected script result %v", res))
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
// expires, sha, size; ok is false when the hash does not exist.
func info(id string, vals []any) (store.Info, bool) {
	str := func(i int) string { x, _ := vals[i].(string); return x }
	if str(0) == "" {
		return store.Info{}, false
	}
	size, _ := strconv.ParseInt(str(5), 10, 64)
	return store.Info{
		ID:       id,
		Size:     size,
		SHA256:   str(4),
		Version:  str(0),
		Created:  micros(str(1)),
		Modified: micros(str(2)),
		Expires:  micros(str(3)),
		Source:   Source,
	}, true
}

var metaFields = []string{fVersion, fCreated, fModified, fExpires, fSHA, fSize}

// Get returns the blob under id, or store.ErrNotFound. Data and metadata come
// from one HMGET, so they belong to the same write.
func (s *Store) Get(ctx context.Context, id string) (store.Object, error) {
	if err := store.CheckID(id); err != nil {
		return store.Object{}, err
	}
	vals, err := s.rdb.HMGet(ctx, s.key(id), append(metaFields, fData)...).Result()
	if err != nil {
		return store.Object{}, s.unavailable("get", err)
	}
	inf, ok := info(id, vals)
	if !ok {
		return store.Object{}, storeutil.NotFound(id)
	}
	data, _ := vals[len(metaFields)].(string)
	return store.Object{Data: []byte(data), Info: inf}, nil
}

// Stat returns the info of the blob under id, or store.ErrNotFound, without
// transferring the data.
func (s *Store) Stat(ctx context.Context, id string) (store.Info, error) {
	if err := store.CheckID(id); err != nil {
		return store.Info{}, err
	}
	vals, err := s.rdb.HMGet(ctx, s.key(id), metaFields...).Result()
	if err != nil {
		return store.Info{}, s.unavailable("stat", err)
	}
	inf, ok := info(id, vals)
	if !ok {
		return store.Info{}, storeutil.NotFound(id)
	}
	return inf, nil
}

// Delete removes the blob under id; a missing id is not an error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := store.CheckID(id); err != nil {
		return err
	}
	if err := s.rdb.Del(ctx, s.key(id)).Err(); err != nil {
		return s.unavailable("delete", err)
	}
	return nil
}

// List returns the info of every blob under the prefix, sorted by id. It
// walks the keys with SCAN (never blocking the server) and fetches their
// metadata in pipelined batches; keys under the prefix that are not valid
// ids or not hashes of this store are skipped.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	var keys []string
	iter := s.rdb.Scan(ctx, 0, globEscape(s.prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, s.unavailable("list (SCAN)", err)
	}
	sort.Strings(keys)
	keys = dedupe(keys) // SCAN may return a key twice
	list := []store.Info{}
	const batch = 500
	for start := 0; start < len(keys); start += batch {
		chunk := keys[start:min(start+batch, len(keys))]
		cmds := make([]*redis.SliceCmd, len(chunk))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range chunk {
				cmds[i] = p.HMGet(ctx, k, metaFields...)
			}
			return nil
		})
		if err != nil && !isWrongType(err) {
			return nil, s.unavailable("list (HMGET)", err)
		}
		for i, k := range chunk {
			id := strings.TrimPrefix(k, s.prefix)
			if store.CheckID(id) != nil {
				continue
			}
			vals, err := cmds[i].Result()
			if err != nil {
				continue // not a hash: not ours
			}
			if inf, ok := info(id, vals); ok { // else deleted or expired meanwhile
				list = append(list, inf)
			}
		}
	}
	return list, nil
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

// Close closes the connection pool.
func (s *Store) Close() error {
	return s.rdb.Close()
}
