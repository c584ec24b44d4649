package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"

	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// ErrFatal is Serve's error when the worker sent a FatalError (an
// unsupported protocol version) and the connection cannot go on.
var ErrFatal = errors.New("monty.v1: the session ended with a fatal error")

// Serve runs w over c: it reads requests and answers them until the parent
// sends Shutdown (nil), closes the connection between frames (nil), sends
// something that is not a request (a FatalError is sent, then the error is
// returned) or ctx ends. It does not close c or w.
func Serve(ctx context.Context, c Conn, w *Worker) (err error) {
	defer func() {
		// A bug of ours must end this session, not the process that may be
		// serving many.
		if r := recover(); r != nil {
			_ = Send(ctx, c, FatalEvent("internal error: %v", r))
			err = fmt.Errorf("monty.v1: internal error: %v", r)
		}
	}()
	send := func(ev *pb.ChildEvent) error { return Send(ctx, c, ev) }
	for {
		req, err := ReadRequest(ctx, c)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, ErrUndecodable):
			// The frame was whole, so the stream is still in step: refuse
			// this request only, as upstream's worker does.
			if err := send(Violation("malformed request: %v", err)); err != nil {
				return err
			}
			continue
		case errors.Is(err, ErrBadFrame), errors.Is(err, ErrFrameTooLarge):
			_ = send(FatalEvent("malformed request frame: %v", err))
			return err
		case err != nil:
			return err
		}
		outcome, err := w.Handle(ctx, req, send)
		if err != nil {
			return err
		}
		switch outcome {
		case Shutdown:
			return nil
		case Fatal:
			return ErrFatal
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
