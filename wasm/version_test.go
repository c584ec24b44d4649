package wasm

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The version of Monty has one source: the pin of the monty crate in
// wasm/Cargo.toml. Scripts and the Makefile read it there; the places
// that must write it out (the other Cargo manifests, the Python
// requirements, MontyVersion) are checked against it here.
var (
	montyPin     = regexp.MustCompile(`(?m)^monty = "=([^"]+)"$`)
	cratePins    = regexp.MustCompile(`(?m)^(monty[-a-z]*) = (?:"=([^"]+)"|\{[^}\n]*version = "=([^"]+)")`)
	patchedPaths = regexp.MustCompile(`\.patched/(monty[-a-z]*)-([0-9][^"/]*)"`)
	pythonPins   = regexp.MustCompile(`(?m)^(pydantic-monty[-a-z]*)==(\S+)`)
)

// TestMontyVersion fails when a pin of a Monty crate or package, or
// MontyVersion, names another version than wasm/Cargo.toml's pin of the
// monty crate.
func TestMontyVersion(t *testing.T) {
	cargo, err := os.ReadFile("Cargo.toml")
	require.NoError(t, err)
	m := montyPin.FindSubmatch(cargo)
	require.NotNil(t, m, "wasm/Cargo.toml pins no monty version (monty = \"=X.Y.Z\")")
	want := string(m[1])
	assert.Equal(t, want, MontyVersion, "wasm.MontyVersion is not the monty version wasm/Cargo.toml pins")

	pins := 0
	for _, f := range []string{"Cargo.toml", "abi/Cargo.toml", "checker/Cargo.toml", "../scripts/native/Cargo.toml"} {
		data, err := os.ReadFile(filepath.FromSlash(f))
		require.NoError(t, err)
		for _, m := range cratePins.FindAllSubmatch(data, -1) {
			pins++
			assert.Equal(t, want, string(m[2])+string(m[3]), "%s pins %s to another version than wasm/Cargo.toml's monty", f, m[1])
		}
		for _, m := range patchedPaths.FindAllSubmatch(data, -1) {
			pins++
			assert.Equal(t, want, string(m[2]), "%s patches %s at another version than wasm/Cargo.toml's monty", f, m[1])
		}
	}
	for _, f := range []string{"../testdata/clients/requirements.txt", "../scripts/bench/wasmtime/requirements.txt"} {
		data, err := os.ReadFile(filepath.FromSlash(f))
		require.NoError(t, err)
		for _, m := range pythonPins.FindAllSubmatch(data, -1) {
			pins++
			assert.Equal(t, want, string(m[2]), "%s pins %s to another version than wasm/Cargo.toml's monty", f, m[1])
		}
	}
	assert.GreaterOrEqual(t, pins, 14, "the pins were not found: the files moved, or their layout changed")
}
