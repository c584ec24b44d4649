package httpapi

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// gatedStore counts Puts and holds each until release is closed.
type gatedStore struct {
	store.Store
	puts    atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	g.puts.Add(1)
	g.entered <- struct{}{}
	<-g.release
	return g.Store.Put(ctx, id, data, cond)
}

// TestStoreProbeIsShared: requests that arrive while a store check runs
// share it; the store sees one probe.
func TestStoreProbeIsShared(t *testing.T) {
	st := &gatedStore{Store: memstore.New(memstore.Options{}), entered: make(chan struct{}, 8), release: make(chan struct{})}
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	defer keeper.Close()
	h, err := New(Options{Keeper: keeper, Session: session.Options{SigningKey: []byte("0123456789abcdef-test")}})
	if err != nil {
		t.Fatal(err)
	}
	first := h.startProbe()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not write")
	}
	if second := h.startProbe(); second != first {
		t.Fatal("a second request started its own probe while one ran")
	}
	close(st.release)
	<-first.done
	if n := st.puts.Load(); n != 1 || first.result.Status != "ok" {
		t.Fatalf("%d probe writes, result %+v", n, first.result)
	}
	// Once it is done, the next request checks again.
	third := h.startProbe()
	if third == first {
		t.Fatal("a finished probe was reused")
	}
	<-st.entered
	<-third.done
	if n := st.puts.Load(); n != 2 {
		t.Fatalf("%d probe writes after a second check, want 2", n)
	}
}
