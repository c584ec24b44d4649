package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkerScriptsExist fails when a column's Python worker moves without
// benchcmp: the wasmtime and cpython columns would fail on every workload
// and leave the table without them (as after scripts/bench/ was made).
func TestWorkerScriptsExist(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, script := range []string{wasmtimeScript, cpythonScript} {
		_, err := os.Stat(filepath.Join(root, script))
		require.NoError(t, err, "benchcmp runs %s from the repository's root", script)
	}
}
