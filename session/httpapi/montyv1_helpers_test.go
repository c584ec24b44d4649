package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	wsserver "github.com/monty-go/monty/session/protocol/server"
)

// montyV1 is a monty.v1 server (package server) beside an API under test.
type montyV1 struct {
	url string
	key string
}

func newMontyV1(t *testing.T, opts wsserver.Options) *montyV1 {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.PoolSize = 1
	if opts.Store != nil && opts.Keeper == nil {
		opts.Keeper = newKeeper(t, opts.Store, session.ManagerOptions{})
	}
	s, err := wsserver.New(context.Background(), opts)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return &montyV1{url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/", key: opts.APIKeys[0]}
}

// feedWaiting opens a stored session whose turns may take up to turn,
// sends code as a feed, and returns the session's id and the channel the
// feed's turn-ending event arrives on.
func (m *montyV1) feedWaiting(t *testing.T, turn time.Duration, code string) (string, <-chan *pb.ChildEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, m.url, &websocket.DialOptions{HTTPHeader: http.Header{"X-Api-Key": {m.key}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.CloseNow() })
	us := uint64(turn.Microseconds())
	cfg := &pb.Configure{ProtocolVersion: protocol.Version, Limits: &pb.ResourceLimits{MaxTurnDurationMicros: &us}}
	ev := roundTrip(t, ws, &pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: cfg}}, 10*time.Second)
	require.NotNil(t, ev.GetOk(), "%v", ev)
	done := make(chan *pb.ChildEvent, 1)
	go func() {
		done <- roundTrip(t, ws, &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: code}}}, turn+10*time.Second)
	}()
	return string(ev.GetSessionId()), done
}

// roundTrip sends req and returns the turn-ending event (nil when the
// connection failed).
func roundTrip(t *testing.T, ws *websocket.Conn, req *pb.ParentRequest, wait time.Duration) *pb.ChildEvent {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if ws.Write(ctx, websocket.MessageBinary, b) != nil {
		return nil
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return nil
		}
		ev := &pb.ChildEvent{}
		if proto.Unmarshal(data, ev) != nil {
			return nil
		}
		if ev.GetPrint() == nil {
			return ev
		}
	}
}

// value is the value of a completed feed.
func (m *montyV1) value(t *testing.T, ev *pb.ChildEvent) object.Value {
	t.Helper()
	require.NotNil(t, ev.GetComplete(), "want a completed feed, got %v", ev)
	vs, err := protocol.DecodeValues(ev.GetComplete().GetValues(), ev.GetComplete().GetValue())
	require.NoError(t, err)
	return vs[0]
}
