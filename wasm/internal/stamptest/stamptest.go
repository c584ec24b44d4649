// Package stamptest holds the two checks the module packages (wasm and
// wasm/checker) make of their committed module: that it is the module its
// checksum file names, and that none of the files it was built from has
// changed since (its stamp, written by scripts/stamp.sh).
package stamptest

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

// Checksum fails t unless module hashes to what the checksum file
// name+".sha256" (in the test's directory) says, and to sum, the hex
// checksum the package exports.
func Checksum(t *testing.T, name string, module []byte, sum string) {
	t.Helper()
	want, err := os.ReadFile(name + ".sha256")
	require.NoError(t, err)
	got := sha256.Sum256(module)
	require.Equal(t, strings.TrimSpace(string(want)), hex.EncodeToString(got[:])+"  "+name,
		"%s does not match %s.sha256: rebuild with `make wasm`", name, name)
	require.Equal(t, hex.EncodeToString(got[:]), sum)
}

// Stamp fails t unless the stamp of module (a path from the repository
// root, which is root from the test's directory) lists the current
// checksum of every input scripts/stamp-inputs.sh names when given args.
func Stamp(t *testing.T, root, module string, args ...string) {
	t.Helper()
	root, err := filepath.Abs(root)
	require.NoError(t, err)
	out, err := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "stamp-inputs.sh")}, args...)...).Output()
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("# Inputs of " + module + "; regenerate with: make wasm\n")
	for _, f := range strings.Fields(string(out)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + f + "\n")
	}
	stamp, err := os.ReadFile(filepath.Join(root, module+".stamp"))
	require.NoError(t, err)
	require.Equal(t, string(stamp), b.String(),
		"the sources of %s changed since it was built: run `make wasm` (needs `make toolchain`) and commit the result", module)
}
