package main_test

import (
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
)

// TestMontyV1Subprocess runs testdata/clients/monty_v1.py: pydantic-monty
// 1.4.0, unmodified, drives upstream's `monty subprocess` and ours (this
// binary) through Monty, MontySession, AsyncMonty and AsyncMontySession,
// and fails unless every scenario sees the same from both (values, errors
// and tracebacks, external functions sync and async, name lookups, host
// modules and classes, OS calls and mounts, every limit, OS policies, type
// checking, print streaming, snapshots and dumps), apart from the
// differences listed in monty_v1_known.py.
func TestMontyV1Subprocess(t *testing.T) {
	out := clienttest.Run(t, 5*time.Minute, nil, "monty_v1.py", clienttest.UpstreamMonty(t), binary)
	t.Log(out)
	// Found through MONTY_BIN alone, as a user would point the client here.
	out = clienttest.Run(t, time.Minute, []string{"MONTY_BIN=" + binary}, "monty_v1.py", "--monty-bin")
	t.Log(out)
}
