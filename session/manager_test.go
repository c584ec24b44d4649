package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestManagerStress runs many goroutines against more sessions than may be
// live at once: no update is lost, busy calls fail fast, eviction persists.
func TestManagerStress(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{MaxLive: 4})
	defer m.Close()
	const sessions, workers, calls = 8, 12, 6
	var ok [sessions]atomic.Int64
	for i := range sessions {
		_, err := m.Exec(ctx, fmt.Sprintf("s%d", i), "n = 0")
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				i := (w + c) % sessions
				res, err := m.Exec(ctx, fmt.Sprintf("s%d", i), "n += 1")
				switch {
				case err == nil && res.Err == nil:
					ok[i].Add(1)
				case errors.Is(err, session.ErrBusy), errors.Is(err, session.ErrTooManySessions):
				default:
					t.Errorf("session s%d: %v %v", i, err, res)
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, m.Live(), 4)
	for i := range sessions {
		res, err := m.Exec(ctx, fmt.Sprintf("s%d", i), "n")
		require.NoError(t, err)
		assert.Equal(t, object.Int(ok[i].Load()), res.Value, "session s%d", i)
	}
}

func TestManagerIdleTimeout(t *testing.T) {
	ctx := context.Background()
	m := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})},
		session.ManagerOptions{IdleTimeout: 100 * time.Millisecond})
	defer m.Close()
	_, err := m.Exec(ctx, "idle", "x = 'kept'")
	require.NoError(t, err)
	assert.Equal(t, 1, m.Live())
	require.Eventually(t, func() bool { return m.Live() == 0 }, 3*time.Second, 20*time.Millisecond)
	res, err := m.Exec(ctx, "idle", "x")
	require.NoError(t, err)
	assert.Equal(t, object.Str("kept"), res.Value, "state survives the close")
}
