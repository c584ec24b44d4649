package runtime

import (
	"context"
	"io"
	"strings"
)

// Stream identifies where a print() call wrote: stdout, or stderr with
// print(..., file=sys.stderr).
type Stream uint8

// Streams.
const (
	Stdout Stream = 0
	Stderr Stream = 1
)

// String returns "stdout" or "stderr".
func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// PrintFunc receives print() output as it is produced.
type PrintFunc func(stream Stream, text string)

// printKey is the context key of WithPrintFunc.
type printKey struct{}

// WithPrintFunc returns a context under which print() output goes to f
// instead of the interpreter's own destination (SetOutput, SetPrintFunc or
// collection), for calls made with that context: Run, Start, Resume, Feed
// and the Host methods that drive them. It routes one run's output without
// touching the interpreter's settings, so code that shares an interpreter
// (a session) can still observe each run separately. Limits.MaxOutput
// applies as usual. A nil f leaves the interpreter's destination in force.
func WithPrintFunc(ctx context.Context, f PrintFunc) context.Context {
	return context.WithValue(ctx, printKey{}, f)
}

func printFuncFrom(ctx context.Context) PrintFunc {
	f, _ := ctx.Value(printKey{}).(PrintFunc)
	return f
}

// output routes print() text to writers, a callback or a collection buffer,
// and enforces Limits.MaxOutput.
type output struct {
	stdout, stderr io.Writer
	callback       PrintFunc
	collected      strings.Builder
	max            int // bytes per call; 0 = unlimited
	written        int
	limitHit       bool
	writeErr       error
}

// streaming reports whether output goes somewhere live (line buffering pays).
func (o *output) streaming() bool {
	return o.stdout != nil || o.stderr != nil || o.callback != nil
}

// begin starts counting for a new top-level call.
func (o *output) begin() {
	o.collected.Reset()
	o.written = 0
	o.limitHit = false
	o.writeErr = nil
}

// write delivers b (to override when it is set) and returns 0, or 1 once
// the limit is reached.
func (o *output) write(stream Stream, b []byte, override PrintFunc) uint32 {
	if o.limitHit {
		return 1
	}
	status := uint32(0)
	if o.max > 0 && o.written+len(b) > o.max {
		b = b[:max(o.max-o.written, 0)]
		o.limitHit = true
		status = 1
	}
	o.written += len(b)
	if len(b) == 0 {
		return status
	}
	switch {
	case override != nil:
		override(stream, string(b))
	case o.callback != nil:
		o.callback(stream, string(b))
	case o.stdout == nil && o.stderr == nil:
		o.collected.Write(b)
	case stream == Stderr && o.stderr != nil, o.stdout == nil:
		o.deliver(o.stderr, b)
	default:
		o.deliver(o.stdout, b)
	}
	return status
}

func (o *output) deliver(w io.Writer, b []byte) {
	if o.writeErr != nil {
		return
	}
	if _, err := w.Write(b); err != nil {
		o.writeErr = err
	}
}
