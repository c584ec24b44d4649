package protocol

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// DefaultMaxFrame is the largest frame a Conn reads unless told otherwise:
// 64 MiB, far above any value a session sends and far below what would hurt
// a server holding many connections.
const DefaultMaxFrame = 64 << 20

// ErrFrameTooLarge reports a frame whose declared length passes the
// reader's cap. Nothing of it is read.
var ErrFrameTooLarge = errors.New("monty.v1: frame too large")

// ErrBadFrame reports bytes that are not a frame of the protocol (a frame
// cut short): the stream is out of step and cannot go on.
var ErrBadFrame = errors.New("monty.v1: malformed frame")

// ErrUndecodable reports a whole frame whose payload is not the expected
// protobuf message. The stream is still in step.
var ErrUndecodable = errors.New("monty.v1: undecodable message")

// decodeError wraps a protobuf error so that errors.Unwrap gives it back.
type decodeError struct{ err error }

func (e *decodeError) Error() string        { return "failed to decode Protobuf message: " + e.err.Error() }
func (e *decodeError) Unwrap() error        { return e.err }
func (e *decodeError) Is(target error) bool { return target == ErrUndecodable }

// Conn carries frames between a parent and a worker: one ParentRequest
// read at a time, ChildEvents written back. ReadFrame is called by one
// goroutine at a time; WriteFrame may be called concurrently with it and
// with itself (print output is flushed by a timer).
type Conn interface {
	// ReadFrame returns the next frame's payload. io.EOF means the peer
	// closed the connection between frames.
	ReadFrame(ctx context.Context) ([]byte, error)
	// WriteFrame sends one payload as a frame.
	WriteFrame(ctx context.Context, payload []byte) error
}

// StreamConn is a Conn over a byte stream (a worker's stdin and stdout):
// each frame is a 4-byte little-endian length and then the payload. It is
// safe for one reader and any number of writers at once.
type StreamConn struct {
	r        io.Reader
	w        io.Writer
	maxFrame int
	mu       sync.Mutex // serialises writes
}

// NewStreamConn reads frames from r and writes them to w, refusing frames
// longer than maxFrame bytes (0: DefaultMaxFrame).
func NewStreamConn(r io.Reader, w io.Writer, maxFrame int) *StreamConn {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &StreamConn{r: r, w: w, maxFrame: maxFrame}
}

// ReadFrame implements Conn. The context is not consulted: a blocked read
// ends when the stream does.
func (c *StreamConn) ReadFrame(context.Context) ([]byte, error) {
	return ReadFrame(c.r, c.maxFrame)
}

// WriteFrame implements Conn.
func (c *StreamConn) WriteFrame(_ context.Context, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return WriteFrame(c.w, payload)
}

// ReadFrame reads one length-prefixed frame from r. It returns io.EOF when
// r ends before a frame starts, ErrBadFrame when it ends inside one, and
// ErrFrameTooLarge (before reading the payload) when the length passes
// maxFrame.
func ReadFrame(r io.Reader, maxFrame int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the stream ended inside a frame's length", ErrBadFrame)
		}
		return nil, err
	}
	n := binary.LittleEndian.Uint32(head[:])
	if uint64(n) > uint64(maxFrame) {
		return nil, fmt.Errorf("%w: %d bytes announced, the limit is %d", ErrFrameTooLarge, n, maxFrame)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the stream ended inside a frame of %d bytes", ErrBadFrame, n)
		}
		return nil, err
	}
	return buf, nil
}

// WriteFrame writes payload to w as one frame.
func WriteFrame(w io.Writer, payload []byte) error {
	buf := make([]byte, 4+len(payload))
	binary.LittleEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadRequest reads and decodes one ParentRequest from c.
func ReadRequest(ctx context.Context, c Conn) (*pb.ParentRequest, error) {
	return readMessage(ctx, c, &pb.ParentRequest{})
}

// ReadEvent reads and decodes one ChildEvent from c (the parent's side).
func ReadEvent(ctx context.Context, c Conn) (*pb.ChildEvent, error) {
	return readMessage(ctx, c, &pb.ChildEvent{})
}

func readMessage[M proto.Message](ctx context.Context, c Conn, m M) (M, error) {
	b, err := c.ReadFrame(ctx)
	if err != nil {
		return m, err
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return m, &decodeError{err}
	}
	return m, nil
}

// Send encodes m and writes it to c as one frame.
func Send(ctx context.Context, c Conn, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return c.WriteFrame(ctx, b)
}
