package main_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
)

// upstreamWorker is upstream's `monty` binary, which pydantic-monty-runtime
// installs beside the client's Python (scripts/pyclients.sh pins it).
func upstreamWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(clienttest.Python(t)), "monty")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("upstream's worker is missing from the client environment (pydantic-monty-runtime): %v", err)
	}
	return bin
}

// TestMontyV1Subprocess runs testdata/clients/monty_v1.py: pydantic-monty
// 1.4.0, unmodified, drives upstream's `monty subprocess` and ours (this
// binary) through Monty, MontySession, AsyncMonty and AsyncMontySession,
// and fails unless every scenario sees the same from both (values, errors
// and tracebacks, external functions sync and async, name lookups, host
// modules and classes, OS calls and mounts, every limit, OS policies, type
// checking, print streaming, snapshots and dumps), apart from the
// differences listed in monty_v1_known.py.
func TestMontyV1Subprocess(t *testing.T) {
	out := clienttest.Run(t, 5*time.Minute, nil, "monty_v1.py", upstreamWorker(t), binary)
	t.Log(out)
}
