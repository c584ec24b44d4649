package storetest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/monty-go/monty/session/store"
)

// Refusing is a store whose writes (Put and Delete) fail with
// store.ErrUnavailable while it refuses them, as a Redis that only reads
// does (min-replicas-to-write with no replica); reads go through. It is
// safe for concurrent use.
type Refusing struct {
	store.Store
	refuse atomic.Bool
}

// NewRefusing wraps st; it takes writes until Refuse(true).
func NewRefusing(st store.Store) *Refusing { return &Refusing{Store: st} }

// Refuse starts (true) or ends refusing writes.
func (r *Refusing) Refuse(on bool) { r.refuse.Store(on) }

// Put stores through, unless writes are refused.
func (r *Refusing) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	if r.refuse.Load() {
		return store.Info{}, fmt.Errorf("%w: writes refused (storetest.Refusing)", store.ErrUnavailable)
	}
	return r.Store.Put(ctx, id, data, cond)
}

// Delete deletes through, unless writes are refused.
func (r *Refusing) Delete(ctx context.Context, id string) error {
	if r.refuse.Load() {
		return fmt.Errorf("%w: writes refused (storetest.Refusing)", store.ErrUnavailable)
	}
	return r.Store.Delete(ctx, id)
}
