package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/wasm"
	"github.com/monty-go/monty/wasm/checker"
)

// scripts/aotgo.sh adds this file to cmd/monty's tests; make test-aot runs
// it on the CLI `make monty-aot` built, named by MONTY_TEST_AOT_BIN.

// TestAOTBinary: the CLI releases ship says it runs both modules
// translated to Go, and runs code and type checks without wazero: with
// an empty cache directory, nothing is compiled into it. It carries
// neither wasm module (monty_noembed, monty_checker_noembed).
func TestAOTBinary(t *testing.T) {
	bin := os.Getenv("MONTY_TEST_AOT_BIN")
	require.NotEmpty(t, bin, "MONTY_TEST_AOT_BIN names the CLI make monty-aot built (make test-aot sets it)")
	exe, err := os.ReadFile(bin)
	require.NoError(t, err)
	for name, module := range map[string][]byte{"monty.wasm": wasm.Module, "checker.wasm": checker.Module} {
		// 64 KiB of the module's code section (which comes before its data
		// segments, which a translation holds too): no translation holds
		// them.
		require.Greater(t, len(module), 1<<20, "this test's own build embeds %s", name)
		at := len(module) / 8
		assert.False(t, bytes.Contains(exe, module[at:at+64<<10]), "the AOT CLI embeds %s", name)
	}
	cache := t.TempDir()
	monty := func(args ...string) (int, string, string) {
		t.Helper()
		return runBinary(t, bin, []string{"MONTY_CACHE_DIR=" + cache}, args...)
	}

	code, out, _ := monty("version")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\nengine: aot\n")
	assert.Contains(t, out, "\ntype checker: aot\n")
	assert.Contains(t, out, "\nmonty: 1.4.0\n")

	code, out, errOut := monty("-c", "print(sum(range(10)))")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "45\n", out)

	bad := filepath.Join(t.TempDir(), "bad.py")
	require.NoError(t, os.WriteFile(bad, []byte("def add(x: int) -> int:\n    return x\n\nadd('1')\n"), 0o644))
	code, out, errOut = monty("check", bad)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out+errOut, "invalid-argument-type")
	code, _, errOut = monty("--type-check", "-c", "x: int = 1\nprint(x)")
	assert.Equal(t, 0, code, errOut)

	code, out, errOut = monty("precompile", "--cache-dir", cache)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "Monty 1.4.0 is translated to Go ahead of time in this binary: nothing to compile\n"+
		"the type checker is translated to Go ahead of time in this binary: nothing to compile\n", out)

	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	assert.Empty(t, entries, "the AOT CLI compiled a module with wazero into its cache")
}
