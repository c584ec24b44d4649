//go:build linux || darwin

package vfs_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/runtimetest"
)

// TestMountFIFO: a FIFO in the mounted directory is refused at once in
// every mode, reading or writing, instead of blocking the host until
// something opens its other end.
func TestMountFIFO(t *testing.T) {
	it := runtimetest.NewInterp(t)
	for _, mode := range mountModes {
		dir := t.TempDir()
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
		h := &runtime.Host{OS: openMode(t, mode, dir)}
		for _, code := range []string{"Path('/data/pipe').read_text()", "Path('/data/pipe').read_bytes()", "open('/data/pipe').read()"} {
			_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\n"+code)
			assert.Equal(t, "PermissionError: [Errno 13] Permission denied: '/data/pipe'", runtimetest.PyErr(t, err), "%s: %s", mode, code)
		}
		if mode == "ro" {
			continue
		}
		_, err := runtimetest.HostRun(t, it, h, "from pathlib import Path\nPath('/data/pipe').append_text('x')")
		assert.Equal(t, "PermissionError: [Errno 13] Permission denied: '/data/pipe'", runtimetest.PyErr(t, err), mode)
	}
}
