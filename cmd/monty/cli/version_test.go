package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/wasm"
)

// TestVersion: monty version (and --version) names monty-go's version, the
// Monty it runs and the engines linked in (wazero here: this test binary
// links no translation), without starting an engine.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := monty(t, args...)
		require.Equal(t, cli.ExitOK, code, errOut)
		assert.Contains(t, out, "monty-go ")
		assert.Contains(t, out, "\nmonty: "+wasm.MontyVersion+"\n")
		assert.Contains(t, out, "\nengine: wazero\n")
		assert.Contains(t, out, "\ntype checker: wazero\n")
		assert.Contains(t, out, "\ngo: go1.")
	}
	old := cli.Version
	cli.Version = "v9.8.7"
	defer func() { cli.Version = old }()
	_, out, _ := monty(t, "version")
	assert.Contains(t, out, "monty-go v9.8.7\n")

	code, _, errOut := monty(t, "version", "extra")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, `unexpected argument "extra"`)
}
