package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redis/go-redis/v9"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/storetest"
)

// newStore opens a store on the test server under a prefix of its own and
// removes its keys when the test ends.
func newStore(t testing.TB, ttl time.Duration) *redisstore.Store {
	t.Helper()
	url := storetest.RedisURL(t)
	s, err := redisstore.New(storetest.Ctx(t), redisstore.Options{
		URL:    url,
		Prefix: "monty-" + storetest.UniquePrefix(t),
		TTL:    ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := s.Client().Scan(ctx, 0, s.Prefix()+"*", 1000).Iterator()
		for iter.Next(ctx) {
			s.Client().Del(ctx, iter.Val())
		}
		_ = s.Close()
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, 0) })
	storetest.RunTTL(t, func(t *testing.T, ttl time.Duration) store.Store { return newStore(t, ttl) }, 500*time.Millisecond)
}

func TestDefaultsAndLayout(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := newStore(t, 0)
	info, err := s.Put(ctx, "a/b", []byte("data"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Source != "redis" {
		t.Errorf("Source %q", info.Source)
	}
	if d := info.Expires.Sub(info.Modified); d != redisstore.DefaultTTL {
		t.Errorf("default TTL %v, want %v", d, redisstore.DefaultTTL)
	}
	key := s.Prefix() + "a/b"
	if ttl := s.Client().PTTL(ctx, key).Val(); ttl < redisstore.DefaultTTL-time.Minute || ttl > redisstore.DefaultTTL {
		t.Errorf("key TTL %v, want about %v", ttl, redisstore.DefaultTTL)
	}
	fields := s.Client().HKeys(ctx, key).Val()
	if len(fields) != 7 {
		t.Errorf("hash fields %v", fields)
	}
	// A foreign key under the prefix (not a hash) does not break List: it
	// is reported when its name is an id, ignored when not.
	s.Client().Set(ctx, s.Prefix()+"stray", "x", time.Minute)
	s.Client().Set(ctx, s.Prefix()+"bad id", "x", time.Minute)
	list, err := s.List(ctx)
	skipped, fatal := store.SplitListError(err)
	if fatal != nil || len(list) != 1 || list[0].ID != "a/b" || len(skipped) != 1 || skipped[0].ID != "stray" {
		t.Errorf("List = %v, %v", list, err)
	}
}

// TestUnreadable: keys under the prefix that are not blobs of this store
// are skipped and reported by List, without hiding the others.
func TestUnreadable(t *testing.T) {
	rdb := func(s store.Store) (*redis.Client, string) {
		rs := s.(*redisstore.Store)
		return rs.Client(), rs.Prefix()
	}
	// garble writes a blob under id, then changes one field of its hash.
	garble := func(field, value string) func(t *testing.T, s store.Store) string {
		return func(t *testing.T, s store.Store) string {
			ctx := storetest.Ctx(t)
			id := "garbled/" + field
			if _, err := s.Put(ctx, id, []byte("data"), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			c, prefix := rdb(s)
			var err error
			if value == "" {
				err = c.HDel(ctx, prefix+id, field).Err()
			} else {
				err = c.HSet(ctx, prefix+id, field, value).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	storetest.RunUnreadable(t, func(t *testing.T) store.Store { return newStore(t, 0) }, []storetest.Damage{
		{Name: "String", Plant: func(t *testing.T, s store.Store) string {
			c, prefix := rdb(s)
			if err := c.Set(storetest.Ctx(t), prefix+"stray", "written by someone else", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			return "stray"
		}},
		{Name: "List", Plant: func(t *testing.T, s store.Store) string {
			c, prefix := rdb(s)
			if err := c.RPush(storetest.Ctx(t), prefix+"queue", "job").Err(); err != nil {
				t.Fatal(err)
			}
			return "queue"
		}},
		{Name: "NoVersion", Plant: garble("v", "")},
		{Name: "GarbledModified", Plant: garble("m", "yesterday")},
		{Name: "ZeroCreated", Plant: garble("c", "0")},
		{Name: "GarbledExpiry", Plant: garble("e", "-5")},
		{Name: "GarbledChecksum", Plant: garble("s", "not-a-sha")},
		{Name: "GarbledSize", Plant: garble("n", "4 bytes")},
	})
}

// TestForeignHash: a hash under the prefix with none of this store's
// fields reads as absent (Get and Stat cannot tell it from a missing key
// without another round trip), but List, which sees the key, reports it.
func TestForeignHash(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := newStore(t, 0)
	if _, err := s.Put(ctx, "ok", []byte("x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().HSet(ctx, s.Prefix()+"foreign", "name", "value").Err(); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	skipped, fatal := store.SplitListError(err)
	if fatal != nil || len(list) != 1 || list[0].ID != "ok" || len(skipped) != 1 || skipped[0].ID != "foreign" {
		t.Errorf("List = %v, %v", list, err)
	}
	if _, err := s.Get(ctx, "foreign"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a foreign hash: %v", err)
	}
	// Data that is not as long as the size field says shows at Get.
	if err := s.Client().HSet(ctx, s.Prefix()+"ok", "d", "longer").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "ok"); !errors.Is(err, store.ErrUnreadable) {
		t.Errorf("Get of a blob whose data is not its size: %v", err)
	}
}

func TestNoExpiry(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := newStore(t, -1)
	info, err := s.Put(ctx, "forever", []byte("x"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Expires.IsZero() {
		t.Errorf("Expires %v with negative TTL", info.Expires)
	}
	if ttl := s.Client().PTTL(ctx, s.Prefix()+"forever").Val(); ttl != -1 {
		t.Errorf("key TTL %v, want none", ttl)
	}
}

func TestUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := redisstore.New(ctx, redisstore.Options{URL: "redis://127.0.0.1:1/0"})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("New on a closed port: %v", err)
	}
	_, err = redisstore.New(ctx, redisstore.Options{URL: "http://nope"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("New with a bad URL: %v", err)
	}
	s := newStore(t, 0)
	_ = s.Close()
	if _, err := s.Get(ctx, "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get after Close: %v", err)
	}
	// An outage fails List as a whole; it is no skipped entry.
	list, err := s.List(ctx)
	if _, fatal := store.SplitListError(err); !errors.Is(fatal, store.ErrUnavailable) || errors.Is(err, store.ErrUnreadable) || list != nil {
		t.Errorf("List after Close = %v, %v", list, err)
	}
}

func BenchmarkSaveLoad(b *testing.B) {
	storetest.Bench(b, newStore(b, 0))
}

// TestPutReplyLost: the reply to a conditional Put that landed is lost
// (the connection drops right after Redis answered), go-redis sends the
// script again, and the retry meets the write the first one made: the
// Put succeeds, as it did, instead of reporting a conflict with itself.
func TestPutReplyLost(t *testing.T) {
	ctx := storetest.Ctx(t)
	direct := newStore(t, 0)
	_, err := direct.Put(ctx, "warm", []byte("x"), store.Cond{}) // the script is loaded
	require.NoError(t, err)

	target := strings.TrimPrefix(storetest.RedisURL(t), "redis://")
	target, _, _ = strings.Cut(target, "/")
	var dropped atomic.Int32
	proxy := faultyProxy(t, target, []byte("lost-reply"), &dropped, new(atomic.Bool))
	prefix := "monty-" + storetest.UniquePrefix(t)
	s, err := redisstore.New(ctx, redisstore.Options{URL: "redis://" + proxy + "/" + redisDB(t), Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Delete(context.Background(), "lost-reply"); _ = s.Close() })

	info, err := s.Put(ctx, "lost-reply", []byte("data"), store.Cond{IfAbsent: true})
	require.NoError(t, err)
	require.Equal(t, int32(1), dropped.Load(), "a reply was dropped")
	got, err := s.Get(ctx, "lost-reply")
	require.NoError(t, err)
	assert.Equal(t, info.Version, got.Info.Version)
	_, err = s.Put(ctx, "lost-reply", []byte("other"), store.Cond{IfAbsent: true})
	assert.ErrorIs(t, err, store.ErrConflict, "a true conflict is still one")
}

// redisDB is the database number of the test server's URL.
func redisDB(t *testing.T) string {
	_, db, ok := strings.Cut(strings.TrimPrefix(storetest.RedisURL(t), "redis://"), "/")
	if !ok {
		return "0"
	}
	db, _, _ = strings.Cut(db, "?")
	return db
}

// faultyProxy is a TCP proxy to target that passes everything but the
// reply to the first command holding marker (nil: none): once Redis
// answered it, the client's connection is closed instead (dropped counts
// it). While hole is set, what clients send goes nowhere and nothing
// answers. It returns the proxy's address.
func faultyProxy(t *testing.T, target string, marker []byte, dropped *atomic.Int32, hole *atomic.Bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			var drop atomic.Bool
			go func() { // client to server
				buf := make([]byte, 64<<10)
				for {
					n, err := client.Read(buf)
					if n > 0 && hole.Load() {
						continue // a black hole
					}
					if n > 0 {
						if marker != nil && bytes.Contains(buf[:n], marker) && dropped.Load() == 0 {
							drop.Store(true)
						}
						if _, err := server.Write(buf[:n]); err != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				_ = server.Close()
			}()
			go func() { // server to client
				buf := make([]byte, 64<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 && drop.Load() && dropped.CompareAndSwap(0, 1) {
						break // the reply is lost
					}
					if n > 0 {
						if _, err := client.Write(buf[:n]); err != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				_ = client.Close()
				_ = server.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestServerStopsAnswering: a server that stops answering (a partition
// that drops packets) fails each call within the store's Timeout, as
// unavailable, instead of holding it for the client's own retries.
func TestServerStopsAnswering(t *testing.T) {
	ctx := storetest.Ctx(t)
	target := strings.TrimPrefix(storetest.RedisURL(t), "redis://")
	target, _, _ = strings.Cut(target, "/")
	hole := new(atomic.Bool)
	proxy := faultyProxy(t, target, nil, new(atomic.Int32), hole)
	s, err := redisstore.New(ctx, redisstore.Options{URL: "redis://" + proxy + "/" + redisDB(t), Prefix: "monty-" + storetest.UniquePrefix(t),
		Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Put(ctx, "k", []byte("v"), store.Cond{})
	require.NoError(t, err)

	hole.Store(true)
	for _, call := range []func() error{
		func() error { _, err := s.Get(ctx, "k"); return err },
		func() error { _, err := s.Stat(ctx, "k"); return err },
		func() error { _, err := s.Put(ctx, "k", []byte("w"), store.Cond{}); return err },
	} {
		start := time.Now()
		err := call()
		require.ErrorIs(t, err, store.ErrUnavailable)
		assert.Contains(t, err.Error(), "no answer within 300ms")
		assert.Less(t, time.Since(start), 3*time.Second, "bounded by the Timeout, not the client's retries")
	}
	hole.Store(false)
	_, err = s.Stat(ctx, "k")
	assert.NoError(t, err, "back once the server answers")
}
