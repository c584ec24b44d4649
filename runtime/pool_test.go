package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

func TestPoolReusesAndDiscards(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(t, err)
	pool := runtime.NewPool(e, 2)
	defer pool.Close(ctx)

	it, err := pool.Get(ctx)
	require.NoError(t, err)
	r, err := it.NewREPL(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx, "secret = 42")
	require.NoError(t, err)
	it.SetLimits(runtime.Limits{MaxDuration: time.Millisecond})
	pool.Put(it)

	// Whatever interpreter comes back next has default limits and no state.
	it2, err := pool.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, runtime.DefaultLimits(), it2.Limits())
	_, err = r.Run(ctx, "secret")
	require.Error(t, err, "the old REPL was freed when its interpreter went back to the pool")
	pool.Put(it2)

	// A dead interpreter is not reused.
	dead, err := pool.Get(ctx)
	require.NoError(t, err)
	require.NoError(t, dead.Close(ctx))
	pool.Put(dead)
	for range 4 {
		got, err := pool.Get(ctx)
		require.NoError(t, err)
		assert.NotSame(t, dead, got)
		require.NoError(t, got.Dead())
		pool.Put(got)
	}
}

func TestPoolConcurrentUse(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(t, err)
	pool := runtime.NewPool(e, 4)
	defer pool.Close(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				it, err := pool.Get(ctx)
				if err != nil {
					errs <- err
					return
				}
				p, err := it.Compile(ctx, "a + b", runtime.WithInputs("a", "b"))
				if err == nil {
					var v object.Value
					v, err = p.Run(ctx, object.Int(g), object.Int(i))
					if err == nil && v != object.Value(object.Int(g+i)) {
						t.Errorf("got %v, want %d", v, g+i)
					}
				}
				if err != nil {
					errs <- err
				}
				pool.Put(it)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
