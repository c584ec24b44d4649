package runtime

import (
	"github.com/tetratelabs/wazero"

	"github.com/monty-go/monty/runtime/internal/modcache"
)

// WithCloseOnContextDone builds an engine that uses wazero's own
// cancellation (it checks the context in every loop and call of the guest),
// for the benchmark comparing it with this package's clock-based mechanism.
func WithCloseOnContextDone() EngineOption {
	return func(c *engineConfig) {
		c.tune = func(rc wazero.RuntimeConfig) wazero.RuntimeConfig { return rc.WithCloseOnContextDone(true) }
		c.wazero = true
	}
}

// RegisterAOTFrom registers the linked AOT module as translated from
// another monty.wasm, until restore is called.
func RegisterAOTFrom(sha256 string) (restore func()) {
	t := registeredAOT.Load()
	RegisterAOT(sha256, t.newInstance)
	return func() { registeredAOT.Store(t) }
}

// ClockReads returns how many times the interpreter read its monotonic clock.
func (it *Interpreter) ClockReads() int64 { return it.clockReads.Load() }

// PinnedWazeroVersion is the wazero version test binaries key the cache by.
const PinnedWazeroVersion = modcache.PinnedWazeroVersion
