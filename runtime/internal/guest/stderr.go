// Package guest holds what the hosts of both wasm modules (the interpreter
// in package runtime, the type checker in runtime/typecheck) share.
package guest

import (
	"bytes"
	"sync"
)

// Stderr keeps the first Max bytes a guest writes to its stderr (Rust panic
// messages, the allocator's reason for ending the instance), to explain a
// trap. It is safe for concurrent use.
type Stderr struct {
	// Max is how many bytes are kept; later bytes are dropped.
	Max int
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write keeps what fits and reports every byte written.
func (b *Stderr) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.Max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// String returns what was kept.
func (b *Stderr) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
