package cli_test

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session/protocol"
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
		assert.Contains(t, out, fmt.Sprintf("\nprotocol: monty.v1 version %d (serves %d-%d)\n", protocol.Version, protocol.MinVersion, protocol.Version))
	}

	code, out, errOut := monty(t, "version", "--json")
	require.Equal(t, cli.ExitOK, code, errOut)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, "monty-go", got["name"])
	assert.Equal(t, wasm.MontyVersion, got["monty"])
	assert.Equal(t, "wazero", got["engine"])
	assert.Equal(t, "wazero", got["type_checker"])
	assert.EqualValues(t, protocol.Version, got["protocol_version"])
	assert.EqualValues(t, protocol.MinVersion, got["min_protocol_version"])
	assert.Equal(t, goruntime.GOOS+"/"+goruntime.GOARCH, got["platform"])
	assert.Equal(t, goruntime.Version(), got["go"])
	for _, key := range []string{"version", "commit"} {
		assert.NotEmpty(t, got[key], key)
	}
	old := cli.Version
	cli.Version = "v9.8.7"
	defer func() { cli.Version = old }()
	oldCommit := cli.Commit
	cli.Commit = "0123abc"
	defer func() { cli.Commit = oldCommit }()
	_, out, _ = monty(t, "version")
	assert.Contains(t, out, "monty-go v9.8.7\n")
	assert.Contains(t, out, "\ncommit: 0123abc\n")
	_, out, _ = monty(t, "version", "--json")
	assert.Contains(t, out, `"version": "v9.8.7"`)

	code, _, errOut = monty(t, "version", "extra")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, `unexpected argument "extra"`)
}
