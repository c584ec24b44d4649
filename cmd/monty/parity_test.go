package main_test

import (
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
)

// TestParityWithUpstream runs testdata/clients/parity.py: each of its
// snippets under upstream Monty (pydantic-monty, in the Python process, no
// OS handler) and under `monty -c`, with and without --max-memory, and
// fails unless every one prints the same and ends the same way (the same
// except branch, the same uncaught exception type and message), apart from
// the differences listed with their reasons in parity_known.py. It covers
// the OS calls no handler serves (os.getenv, os.environ, open, Path
// methods: RuntimeError and PermissionError worded as upstream words them)
// and sizes no memory can hold ([0] * 2**40, bytes(2**40), widths:
// MemoryError, as on a 64-bit host, not OverflowError from wasm32's 32-bit
// usize).
func TestParityWithUpstream(t *testing.T) {
	out := clienttest.Run(t, 5*time.Minute, nil, "parity.py", binary)
	t.Log(out)
}
