package protocol

import (
	"sync"
	"time"

	"github.com/monty-go/monty/runtime"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// DefaultPrintFlushInterval is how long print output may wait before it is
// sent when the parent does not say (upstream's default).
const DefaultPrintFlushInterval = 5 * time.Millisecond

// printer batches print() output into Print events: a completed line is
// sent at once when the interval is zero; otherwise output waits at most the
// interval (a timer sends it) and is always flushed before a turn ends.
// Safe for the interpreter's print callback and the timer at once.
type printer struct {
	mu       sync.Mutex
	segs     []*pb.PrintSegment
	interval time.Duration
	timer    *time.Timer
	send     func(*pb.ChildEvent)
}

func streamPB(s runtime.Stream) pb.PrintStream {
	if s == runtime.Stderr {
		return pb.PrintStream_PRINT_STREAM_STDERR
	}
	return pb.PrintStream_PRINT_STREAM_STDOUT
}

// write takes output from the interpreter.
func (p *printer) write(s runtime.Stream, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stream := streamPB(s)
	if n := len(p.segs); n > 0 && p.segs[n-1].Stream == stream {
		p.segs[n-1].Text += text
	} else {
		p.segs = append(p.segs, &pb.PrintSegment{Stream: stream, Text: text})
	}
	if p.interval <= 0 {
		p.flushLocked()
		return
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(p.interval, p.flush)
	}
}

// flush sends what is buffered.
func (p *printer) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
}

func (p *printer) flushLocked() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if len(p.segs) == 0 || p.send == nil {
		p.segs = nil
		return
	}
	segs := p.segs
	p.segs = nil
	p.send(&pb.ChildEvent{Kind: &pb.ChildEvent_Print{Print: &pb.Print{Segments: segs}}})
}
