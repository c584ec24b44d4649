package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// errFrameStalled ends a connection whose frame stopped arriving midway.
var errFrameStalled = errors.New("request frame stalled")

// frameTooBigError ends a connection whose frame header announces more
// than the frame cap, before any of its payload is read.
type frameTooBigError struct{ announced, limit int64 }

func (e *frameTooBigError) Error() string {
	return fmt.Sprintf("request frame of %d bytes exceeds the cap of %d", e.announced, e.limit)
}

// guardWriter hands the WebSocket library a connection wrapped in a
// frameGuard when it hijacks the upgrade request's.
type guardWriter struct {
	http.ResponseWriter
	limit   int64
	timeout time.Duration
	guard   *frameGuard // set by Hijack
}

// Hijack is http.Hijacker's, for websocket.Accept.
func (w *guardWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Bytes the HTTP server read past the upgrade request are the first
	// frames: they pass through the guard too.
	early, _ := brw.Reader.Peek(brw.Reader.Buffered())
	w.guard = &frameGuard{Conn: c, early: bytes.Clone(early), limit: w.limit, timeout: w.timeout}
	brw.Reader.Reset(w.guard)
	return w.guard, brw, nil
}

// frameGuard reads a client's WebSocket frames as they arrive, below the
// WebSocket library, which would only notice an oversized frame after
// reading up to the cap of it, and waits for a payload as long as the
// caller's context allows:
//   - a data frame whose header announces more than limit bytes, or that
//     brings its message past limit, fails the read as soon as the header
//     is complete (frameTooBigError);
//   - a frame, or fragmented message, must arrive whole within timeout of
//     its first byte, or the read fails (errFrameStalled).
//
// Once failed, every later read fails the same way. Only the connection's
// reader uses it (the library serializes reads).
type frameGuard struct {
	net.Conn
	early   []byte // read before the hijack, delivered first
	ready   []byte // scanned bytes waiting to be delivered
	limit   int64
	timeout time.Duration
	err     error

	head      [14]byte // the frame header being read
	headLen   int
	payload   int64 // payload bytes of the current frame still to come
	inMessage bool  // a data message has started and not finished
	msgLen    int64 // payload of the current message so far
	started   bool  // a message began in the last read
	armed     bool  // the read deadline is set
}

func (g *frameGuard) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(g.ready) > 0 {
			n := copy(p, g.ready)
			g.ready = g.ready[n:]
			return n, nil
		}
		if g.err != nil {
			return 0, g.err
		}
		n, err := g.fill(p)
		if g.err != nil {
			return 0, g.err
		}
		var carried []byte // header bytes held back from earlier reads
		if g.headLen > 0 {
			carried = append(carried, g.head[:g.headLen]...)
		}
		out, ferr := g.scan(p[:n])
		g.track()
		if ferr != nil {
			g.err = ferr
		}
		switch {
		case len(carried) > 0 && out > 0:
			// The held header is complete and allowed: it goes first.
			g.ready = append(carried, p[:out]...)
			if err != nil && g.err == nil {
				g.err = err
			}
		case out > 0 || err != nil:
			return out, err
		}
		// Nothing to deliver yet (a header is still coming): read on.
	}
}

// fill reads the next bytes: the early ones, then the connection's. A read
// deadline passing while a frame is due fails the guard.
func (g *frameGuard) fill(p []byte) (int, error) {
	if len(g.early) > 0 {
		n := copy(p, g.early)
		g.early = g.early[n:]
		return n, nil
	}
	n, err := g.Conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) && g.armed {
		g.err = fmt.Errorf("%w: no complete frame within %s of its first byte", errFrameStalled, g.timeout)
	}
	return n, err
}

// track sets the read deadline: it runs from the first byte of each
// message (or control frame between messages) and is lifted between them.
func (g *frameGuard) track() {
	busy, started := g.busy(), g.started
	g.started = false
	var deadline time.Time
	switch {
	case busy && (started || !g.armed):
		deadline = time.Now().Add(g.timeout)
	case !busy && g.armed:
	default:
		return
	}
	g.armed = busy
	if err := g.Conn.SetReadDeadline(deadline); err != nil && g.err == nil {
		g.err = err
	}
}

// busy reports whether a frame or message is partly read.
func (g *frameGuard) busy() bool {
	return g.headLen > 0 || g.payload > 0 || g.inMessage
}

// scan follows the frame structure through b and returns how many of its
// bytes may be delivered: all but a header still incomplete at its end, or
// one refused (with the error). A header is delivered only whole and
// allowed, so the library never sees the length of one refused.
func (g *frameGuard) scan(b []byte) (int, error) {
	out := len(b)
	if g.headLen > 0 {
		out = 0 // a header carried over: nothing goes before it completes
	}
	for i := 0; i < len(b); {
		if g.payload > 0 {
			skip := min(g.payload, int64(len(b)-i))
			g.payload -= skip
			i += int(skip)
			continue
		}
		if g.headLen == 0 {
			out = i
			if !g.inMessage {
				g.started = true
			}
		}
		g.head[g.headLen] = b[i]
		g.headLen++
		i++
		if g.headLen < headerSize(g.head[:g.headLen]) {
			continue
		}
		if err := g.frame(); err != nil {
			return out, err
		}
		g.headLen = 0
		out = i
	}
	if g.headLen == 0 {
		out = len(b)
	}
	return out, nil
}

// headerSize is the length of the header whose first bytes are h, as far
// as they tell (2 until the second byte is in).
func headerSize(h []byte) int {
	if len(h) < 2 {
		return 2
	}
	n := 2
	switch h[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if h[1]&0x80 != 0 {
		n += 4 // the mask key
	}
	return n
}

// frame takes in the complete header in g.head.
func (g *frameGuard) frame() error {
	h := g.head[:g.headLen]
	fin, opcode := h[0]&0x80 != 0, h[0]&0x0f
	var length int64
	switch l := h[1] & 0x7f; l {
	case 126:
		length = int64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		u := binary.BigEndian.Uint64(h[2:10])
		if u > 1<<62 {
			return &frameTooBigError{announced: int64(min(u, 1<<63-1)), limit: g.limit}
		}
		length = int64(u)
	default:
		length = int64(l)
	}
	if opcode&0x8 == 0 { // a data frame: text, binary or continuation
		if g.msgLen+length > g.limit {
			return &frameTooBigError{announced: g.msgLen + length, limit: g.limit}
		}
		g.msgLen += length
		g.inMessage = !fin
		if fin {
			g.msgLen = 0
		}
	}
	g.payload = length
	return nil
}
