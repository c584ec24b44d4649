package runtime

import (
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

// write delivers b and returns 0, or 1 once the limit is reached.
func (o *output) write(stream Stream, b []byte) uint32 {
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
