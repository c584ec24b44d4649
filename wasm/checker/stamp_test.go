package checker

import (
	"testing"

	"github.com/monty-go/monty/wasm/internal/stamptest"
)

// TestModuleChecksum fails when checker.wasm differs from checker.wasm.sha256.
func TestModuleChecksum(t *testing.T) {
	stamptest.Checksum(t, "checker.wasm", Module, SHA256)
}

// TestStamp fails when a source of the module changed after it was built:
// the stamp lists the checksum of every input scripts/stamp-inputs.sh
// names for the checker.
func TestStamp(t *testing.T) {
	stamptest.Stamp(t, "../..", "wasm/checker/checker.wasm", "--checker")
}
