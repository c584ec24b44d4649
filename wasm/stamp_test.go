package wasm

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleChecksum fails when monty.wasm differs from monty.wasm.sha256.
func TestModuleChecksum(t *testing.T) {
	want, err := os.ReadFile("monty.wasm.sha256")
	require.NoError(t, err)
	sum := sha256.Sum256(Module)
	require.Equal(t, strings.TrimSpace(string(want)), hex.EncodeToString(sum[:])+"  monty.wasm",
		"monty.wasm does not match monty.wasm.sha256: rebuild with `make wasm`")
	require.Equal(t, hex.EncodeToString(sum[:]), SHA256)
}

// TestStamp fails when a source of the module changed after it was built
// (the stamp lists the checksum of every input; scripts/stamp-inputs.sh).
func TestStamp(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	inputs := []string{"wasm/Cargo.toml", "wasm/Cargo.lock", "scripts/build-wasm.sh", "scripts/toolchain.env",
		"scripts/patch-monty.sh"}
	for dir, suffix := range map[string]string{"src": ".rs", "patches": ".patch"} {
		err = filepath.WalkDir(filepath.Join(root, "wasm", dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
				rel, _ := filepath.Rel(root, p)
				inputs = append(inputs, filepath.ToSlash(rel))
			}
			return err
		})
		require.NoError(t, err)
	}
	sort.Strings(inputs)
	var b strings.Builder
	b.WriteString("# Inputs of wasm/monty.wasm; regenerate with: make wasm\n")
	for _, f := range inputs {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + f + "\n")
	}
	stamp, err := os.ReadFile("monty.wasm.stamp")
	require.NoError(t, err)
	require.Equal(t, string(stamp), b.String(),
		"the module's sources changed since it was built: run `make wasm` (needs `make toolchain`) and commit the result")
}
