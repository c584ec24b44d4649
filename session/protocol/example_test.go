package protocol_test

import (
	"context"
	"fmt"
	"io"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// A worker served over a pair of pipes, driven as pydantic-monty drives
// `monty subprocess`: configure a session, feed a snippet that calls a
// function the parent provides, answer the call, read the result.
func ExampleServe() {
	ctx := context.Background()
	toWorker, fromParent := io.Pipe()
	toParent, fromWorker := io.Pipe()
	w := protocol.NewWorker(protocol.WorkerOptions{})
	go func() {
		defer fromWorker.Close()
		defer w.Close(ctx)
		_ = protocol.Serve(ctx, protocol.NewStreamConn(toWorker, fromWorker, 0), w)
	}()
	parent := protocol.NewStreamConn(toParent, fromParent, 0)
	turn := func(req *pb.ParentRequest) *pb.ChildEvent {
		_ = protocol.Send(ctx, parent, req)
		for {
			ev, err := protocol.ReadEvent(ctx, parent)
			if err != nil || ev.GetPrint() == nil {
				return ev
			}
		}
	}

	turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: &pb.Configure{ProtocolVersion: protocol.Version}}})
	ev := turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: "len(fetch('monty'))"}}})
	call := ev.GetFunctionCall()
	args, _ := protocol.DecodeValues(call.GetValues(), call.GetArgs()...)
	fmt.Println("the code calls", call.GetFunctionName(), object.Repr(object.List(args)))

	arena, roots, _ := protocol.EncodeValues(object.Str(string(args[0].(object.Str)) + "-go"))
	ev = turn(&pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{
		CallId: call.GetCallId(), Values: arena,
		Result: &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_ReturnValue{ReturnValue: roots[0]}},
	}}})
	result, _ := protocol.DecodeValues(ev.GetComplete().GetValues(), ev.GetComplete().GetValue())
	fmt.Println("result:", object.Repr(result[0]))
	turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Shutdown{Shutdown: &pb.Shutdown{}}})
	// Output:
	// the code calls fetch ['monty']
	// result: 8
}
