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

// maxBufferedOutput is the most print output held back for the flush
// interval: more is sent at once, whatever the interval the parent asked
// for, so that a print loop cannot fill memory between flushes.
const maxBufferedOutput = 64 << 10

// printer batches print() output into Print events: a completed line is
// sent at once when the interval is zero; otherwise output waits at most the
// interval (a timer sends it) and is always flushed before a turn ends.
// Safe for the interpreter's print callback and the timer at once.
type printer struct {
	mu       sync.Mutex
	segs     []*pb.PrintSegment
	size     int
	interval time.Duration
	timer    *time.Timer
	send     func(*pb.ChildEvent)
}

// start begins a request: output goes to send, batched by interval.
func (p *printer) start(send func(*pb.ChildEvent), interval time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.send, p.interval = send, interval
}

// stop flushes what is buffered and ends the request: nothing is sent
// after it returns.
func (p *printer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
	p.send = nil
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
	p.size += len(text)
	if p.interval <= 0 || p.size >= maxBufferedOutput {
		p.flushLocked()
		return
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(p.interval, p.flush)
	}
}

// flush sends what is buffered (the timer's callback).
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
	segs := p.segs
	p.segs, p.size = nil, 0
	if len(segs) == 0 || p.send == nil {
		return
	}
	p.send(&pb.ChildEvent{Kind: &pb.ChildEvent_Print{Print: &pb.Print{Segments: segs}}})
}
