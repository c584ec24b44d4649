package wasm

import (
	"testing"

	"github.com/monty-go/monty/wasm/internal/stamptest"
)

// TestModuleChecksum fails when monty.wasm differs from monty.wasm.sha256.
func TestModuleChecksum(t *testing.T) {
	stamptest.Checksum(t, "monty.wasm", Module, SHA256)
}

// TestStamp fails when a source of the module changed after it was built
// (the stamp lists the checksum of every input; scripts/stamp-inputs.sh).
func TestStamp(t *testing.T) {
	stamptest.Stamp(t, "..", "wasm/monty.wasm")
}
