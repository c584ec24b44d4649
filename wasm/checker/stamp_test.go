package checker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleChecksum fails when checker.wasm differs from checker.wasm.sha256.
func TestModuleChecksum(t *testing.T) {
	want, err := os.ReadFile("checker.wasm.sha256")
	require.NoError(t, err)
	sum := sha256.Sum256(Module)
	require.Equal(t, strings.TrimSpace(string(want)), hex.EncodeToString(sum[:])+"  checker.wasm",
		"checker.wasm does not match checker.wasm.sha256: rebuild with `make wasm`")
	require.Equal(t, hex.EncodeToString(sum[:]), SHA256)
}

// TestStamp fails when a source of the module changed after it was built:
// the stamp lists the checksum of every input scripts/stamp-inputs.sh
// names for the checker.
func TestStamp(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "stamp-inputs.sh"), "--checker")
	out, err := cmd.Output()
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("# Inputs of wasm/checker/checker.wasm; regenerate with: make wasm\n")
	for _, f := range strings.Fields(string(out)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + f + "\n")
	}
	stamp, err := os.ReadFile("checker.wasm.stamp")
	require.NoError(t, err)
	require.Equal(t, string(stamp), b.String(),
		"the checker's sources changed since it was built: run `make wasm` (needs `make toolchain`) and commit the result")
}
