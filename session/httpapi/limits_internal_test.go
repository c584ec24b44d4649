package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
)

// TestExecLimitErrorMapping: every failure a limit explains is a 422 with
// the limit's code and a message free of the interpreter's internals;
// other failures are left to storeError. Interpreter aborts are hard to
// provoke from Python since the runtime checks allocations up front, so
// the errors the runtime returns are built here.
func TestExecLimitErrorMapping(t *testing.T) {
	lim := runtime.Limits{MaxDuration: time.Second, MaxMemory: 8 << 20, MaxOutput: 1 << 10, MaxResult: 1 << 20}
	srv := runtime.Limits{MaxDuration: 30 * time.Second, MaxMemory: 256 << 20, MaxOutput: 1 << 20, MaxResult: 16 << 20}
	wasmErr := errors.New("wasm error: unreachable\nwasm stack trace:\n\tmonty.wasm.$rust_panic(i32)\n\tmonty.wasm.$alloc(i32)")
	for _, tc := range []struct {
		name   string
		err    error
		pyErr  *runtime.Error
		opened bool
		code   string
		want   string
	}{
		{"memory ceiling", &runtime.TrapError{Cause: wasmErr, Stderr: "allocation of 300000000 bytes exceeds the memory limit"}, nil, true, "memory_limit", "8 MiB"},
		{"other abort", &runtime.TrapError{Cause: wasmErr, Stderr: "panicked at src/lib.rs"}, nil, true, codeAborted, "interpreter abort"},
		{"result", fmt.Errorf("%w: more than 1048576 bytes encoded", runtime.ErrResultLimit), nil, true, "result_size_limit", "up to 16 MiB"},
		{"host calls", fmt.Errorf("%w: more than 1000 host calls in one run", runtime.ErrHostCallLimit), nil, true, "host_call_limit", "1000 host calls"},
		{"joined with a rollback failure", errors.Join(fmt.Errorf("%w: x", runtime.ErrHostCallLimit), errors.New("rollback")), nil, true, "host_call_limit", "host calls"},
		{"stored state", fmt.Errorf("session x: %w", &runtime.StateLimitError{Need: 20 << 20, Limit: 8 << 20}), nil, false, codeStateTooLarge, "20 MiB"},
		{"stored state aborted the load", fmt.Errorf("session x: %w", &runtime.StateLimitError{Need: 16 << 20, Limit: 8 << 20}), nil, false, codeStateTooLarge, "limits.memory_bytes"},
		{"time", nil, &runtime.Error{Type: "TimeoutError", Message: "time limit exceeded", Limit: runtime.TimeLimit}, true, "time_limit", "up to 30s"},
		{"int", nil, &runtime.Error{Type: "OverflowError", Limit: runtime.IntLimit}, true, "int_size_limit", fmt.Sprintf("%d bits", runtime.DefaultMaxIntBits)},
		{"output at the server's maximum", nil, &runtime.Error{Type: "MemoryError", Limit: runtime.OutputLimit}, true, "output_limit", "1 KiB"},
	} {
		aerr := execLimitError(tc.err, tc.pyErr, tc.opened, lim, srv)
		if aerr == nil || aerr.status != http.StatusUnprocessableEntity || aerr.code != tc.code || !strings.Contains(aerr.msg, tc.want) {
			t.Errorf("%s: %+v, want 422 %s mentioning %q", tc.name, aerr, tc.code, tc.want)
			continue
		}
		if strings.Contains(aerr.msg, "wasm") || !strings.HasSuffix(aerr.msg, keptNote) && tc.code != codeStateTooLarge {
			t.Errorf("%s: message %q", tc.name, aerr.msg)
		}
	}
	for name, err := range map[string]error{
		"cancelled":   fmt.Errorf("%w: %w", runtime.ErrCancelled, context.Canceled),
		"store":       store.ErrUnavailable,
		"conflict":    store.ErrConflict,
		"no error":    nil,
		"plain error": errors.New("boom"),
	} {
		if aerr := execLimitError(err, nil, true, lim, srv); aerr != nil {
			t.Errorf("%s: mapped to %+v", name, aerr)
		}
	}
	// An ordinary exception is a 200, not a limit.
	if aerr := execLimitError(nil, &runtime.Error{Type: "ValueError"}, true, lim, srv); aerr != nil {
		t.Errorf("ValueError: %+v", aerr)
	}
}

// TestPythonErrorBounded: an exception's texts and traceback are cut to
// bounded sizes in an answer.
func TestPythonErrorBounded(t *testing.T) {
	e := &runtime.Error{Type: "ValueError", Message: strings.Repeat("m", 1<<20), Text: strings.Repeat("t", 1<<20)}
	for i := range 5000 {
		e.Traceback = append(e.Traceback, runtime.Frame{Filename: "<input>", Line: i, Name: "f", Source: strings.Repeat("s", 10000)})
	}
	pe := pythonError(e)
	if len(pe.Message) > maxErrorText+64 || len(pe.Text) > maxErrorText+64 || len(pe.Traceback) != maxFrames+1 {
		t.Fatalf("message %d, text %d, %d frames", len(pe.Message), len(pe.Text), len(pe.Traceback))
	}
	if pe.Traceback[0].Line != 0 || pe.Traceback[maxFrames].Line != 4999 || !strings.Contains(pe.Traceback[maxFrames/2].Function, "4900 more frames") {
		t.Fatalf("kept frames: first %+v, marker %+v, last %+v", pe.Traceback[0].Line, pe.Traceback[maxFrames/2], pe.Traceback[maxFrames].Line)
	}
	if len(pe.Traceback[0].Source) > maxFrameSource+64 {
		t.Fatalf("frame source %d bytes", len(pe.Traceback[0].Source))
	}
	if got := truncate("aé", 2); got != "a… [2 more bytes not shown]" {
		t.Fatalf("truncate cut a character: %q", got)
	}
}

// TestExecLimitErrorLoading: failures while the session loads are the
// stored state's, not the code's.
func TestExecLimitErrorLoading(t *testing.T) {
	lim := runtime.Limits{MaxDuration: time.Second, MaxMemory: 8 << 20}
	trap := &runtime.TrapError{Cause: errors.New("wasm error: unreachable\nwasm stack trace: …")}
	if aerr := execLimitError(trap, nil, false, lim, lim); aerr != nil {
		t.Errorf("an abort while loading: %+v, want the server's error", aerr)
	}
	aerr := execLimitError(&runtime.Error{Type: "TimeoutError", Limit: runtime.TimeLimit}, nil, false, lim, lim)
	if aerr == nil || aerr.code != "time_limit" || !strings.Contains(aerr.msg, "loading the session's stored state") {
		t.Errorf("a time limit while loading: %+v", aerr)
	}
}
