package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	// A foreign key under the prefix (not a hash) does not break List.
	s.Client().Set(ctx, s.Prefix()+"stray", "x", time.Minute)
	s.Client().Set(ctx, s.Prefix()+"bad id", "x", time.Minute)
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "a/b" {
		t.Errorf("List = %v, %v", list, err)
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
}

func BenchmarkSaveLoad(b *testing.B) {
	storetest.Bench(b, newStore(b, 0))
}
