package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store/memstore"
)

// A monty.v1 server in a Go program: mount it on any address; a client
// (pydantic-monty's AsyncMontyWebsocket, here a few lines of Go) connects
// with its API key and gets a stored session.
func ExampleNew() {
	ctx := context.Background()
	// One keeper of live sessions per process, shared by its surfaces.
	st := memstore.New(memstore.Options{})
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	defer keeper.Close()
	s, err := server.New(ctx, server.Options{
		Store:      st,
		Keeper:     keeper,
		SigningKey: []byte("a signing key of 16+ bytes"),
		APIKeys:    []string{"example-key-1"},
	})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(ctx)
	hs := httptest.NewServer(s)
	defer hs.Close()

	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/",
		&websocket.DialOptions{HTTPHeader: http.Header{"X-Api-Key": {"example-key-1"}}})
	if err != nil {
		panic(err)
	}
	defer ws.CloseNow()
	turn := func(req *pb.ParentRequest) *pb.ChildEvent {
		b, _ := proto.Marshal(req)
		_ = ws.Write(ctx, websocket.MessageBinary, b)
		for {
			_, b, _ := ws.Read(ctx)
			ev := &pb.ChildEvent{}
			_ = proto.Unmarshal(b, ev)
			if ev.GetPrint() == nil {
				return ev
			}
		}
	}
	ev := turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: &pb.Configure{ProtocolVersion: protocol.Version}}})
	fmt.Println("stored session:", strings.HasPrefix(string(ev.GetSessionId()), "s-"))
	ev = turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: "sum(range(10))"}}})
	v, _ := protocol.DecodeValues(ev.GetComplete().GetValues(), ev.GetComplete().GetValue())
	fmt.Println(object.Repr(v[0]))
	// Output:
	// stored session: true
	// 45
}
