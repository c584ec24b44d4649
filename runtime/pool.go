package runtime

import (
	"context"
	"sync"
)

// Pool keeps warm interpreters ready so that getting one costs a channel
// receive instead of an instantiation. It is safe for concurrent use.
type Pool struct {
	engine *Engine
	ready  chan *Interpreter
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	// filling counts interpreters being instantiated in the background, so
	// ready plus filling never exceeds the pool's size.
	filling int
}

// NewPool creates a pool that keeps up to size interpreters ready, filled in
// the background.
func NewPool(e *Engine, size int) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{engine: e, ready: make(chan *Interpreter, max(size, 1)), ctx: ctx, cancel: cancel}
	for range cap(p.ready) {
		p.refill()
	}
	return p
}

// refill instantiates one interpreter in the background if the pool is
// short of one.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.ready)+p.filling >= cap(p.ready) {
		return
	}
	p.filling++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		it, err := p.engine.NewInterpreter(p.ctx)
		p.mu.Lock()
		p.filling--
		p.mu.Unlock()
		if err != nil {
			return
		}
		p.offer(it)
	}()
}

// offer keeps it if there is room, else closes it.
func (p *Pool) offer(it *Interpreter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		select {
		case p.ready <- it:
			return
		default:
		}
	}
	_ = it.Close(context.Background())
}

// Get returns a ready interpreter, or instantiates one if none is ready.
// Interpreters made before the engine switched to compiled machine code
// (see [WithFastStart]) are closed instead of handed out. Return it with
// Put (or Close it).
func (p *Pool) Get(ctx context.Context) (*Interpreter, error) {
	for {
		select {
		case it := <-p.ready:
			p.refill()
			if it.Outdated() {
				_ = it.Close(ctx)
				continue
			}
			return it, nil
		default:
		}
		return p.engine.NewInterpreter(ctx)
	}
}

// Put returns an interpreter for reuse: everything it holds (programs,
// REPLs, paused runs) is freed and its settings reset. A dead or outdated
// interpreter, or one that does not fit, is closed.
func (p *Pool) Put(it *Interpreter) {
	if it.dead != nil || it.Outdated() {
		_ = it.Close(context.Background())
		return
	}
	for h := range it.handles {
		it.free(h)
	}
	if it.dead != nil {
		_ = it.Close(context.Background())
		return
	}
	it.SetLimits(DefaultLimits())
	it.SetOutput(nil, nil)
	it.output.begin()
	p.offer(it)
}

// Close closes every ready interpreter and stops refilling. Interpreters
// handed out stay usable; Put closes them.
func (p *Pool) Close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	for {
		select {
		case it := <-p.ready:
			_ = it.Close(ctx)
		default:
			return
		}
	}
}
