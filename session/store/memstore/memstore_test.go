package memstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memstore.New(memstore.Options{})
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
	storetest.RunTTL(t, func(t *testing.T, ttl time.Duration) store.Store {
		s := memstore.New(memstore.Options{TTL: ttl})
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, 200*time.Millisecond)
}

func TestSourceAndLazyDrop(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := memstore.New(memstore.Options{TTL: 20 * time.Millisecond})
	info, err := s.Put(ctx, "x", []byte("x"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Source != "memory" {
		t.Errorf("Source %q", info.Source)
	}
	time.Sleep(30 * time.Millisecond)
	if s.Len() != 1 {
		t.Fatalf("expired entry dropped eagerly? Len %d", s.Len())
	}
	if _, err := s.Stat(ctx, "x"); err == nil {
		t.Fatal("expired entry still visible")
	}
	if s.Len() != 0 {
		t.Errorf("expired entry not dropped when touched: Len %d", s.Len())
	}
	_ = s.Close()
	if _, err := s.Get(ctx, "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get after Close: %v", err)
	}
}

func BenchmarkSaveLoad(b *testing.B) {
	storetest.Bench(b, memstore.New(memstore.Options{}))
}
