package agenttest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/monty-go/monty/session/tools"
)

// Gate is a registry with one host function, gate(), that holds the code
// calling it until the test lets it go: a test sees a call running, and
// what waits behind it. Make one with NewGate; it is safe for concurrent
// use.
type Gate struct {
	// Registry has gate().
	Registry *tools.Registry
	// Entered is closed when the code first calls gate().
	Entered <-chan struct{}
	// Stopped receives the cause of the first call's context ending
	// before Release, when it does.
	Stopped <-chan error

	calls   atomic.Int32
	release chan struct{}
	once    sync.Once
}

// NewGate returns a Gate, released when the test ends.
func NewGate(t testing.TB) *Gate {
	t.Helper()
	entered, stopped := make(chan struct{}), make(chan error, 1)
	g := &Gate{Entered: entered, Stopped: stopped, release: make(chan struct{})}
	gate := tools.MustFunc(tools.Schema{Name: "gate"}, func(ctx context.Context) error {
		first := g.calls.Add(1) == 1
		if first {
			close(entered)
		}
		select {
		case <-g.release:
			return nil
		case <-ctx.Done():
			if first {
				stopped <- context.Cause(ctx)
			}
			return ctx.Err()
		}
	})
	reg, err := tools.NewRegistry(gate)
	if err != nil {
		t.Fatal(err)
	}
	g.Registry = reg
	t.Cleanup(g.Release)
	return g
}

// Release lets every call of gate() return, now and from now on.
func (g *Gate) Release() { g.once.Do(func() { close(g.release) }) }

// Calls is the number of calls of gate() so far.
func (g *Gate) Calls() int { return int(g.calls.Load()) }
