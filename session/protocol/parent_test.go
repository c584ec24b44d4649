package protocol_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// parent drives one worker as pydantic-monty does: a request, then events
// up to the turn-ending one.
type parent struct {
	t    testing.TB
	conn protocol.Conn
	raw  io.Writer // the worker's input, for frames that are not requests
	done chan error
	stop func()
}

var (
	engineOnce sync.Once
	engine     *runtime.Engine
	engineErr  error
)

func testEngine(t testing.TB) *runtime.Engine {
	engineOnce.Do(func() { engine, engineErr = runtime.Default(context.Background()) })
	require.NoError(t, engineErr)
	return engine
}

// ourWorker serves a Worker in this process over pipes.
func ourWorker(t testing.TB) *parent {
	reqR, reqW := io.Pipe()
	evR, evW := io.Pipe()
	w := protocol.NewWorker(protocol.WorkerOptions{Engine: testEngine(t)})
	done := make(chan error, 1)
	go func() {
		err := protocol.Serve(context.Background(), protocol.NewStreamConn(reqR, evW, 0), w)
		w.Close(context.Background())
		_ = evW.Close()
		done <- err
	}()
	p := &parent{t: t, conn: protocol.NewStreamConn(evR, reqW, 0), raw: reqW, done: done}
	p.stop = func() { _ = reqW.Close() }
	t.Cleanup(func() { p.stop(); <-done })
	return p
}

// upstreamWorker starts upstream's `monty subprocess` (pydantic-monty-runtime,
// beside MONTY_TEST_PYTHON).
func upstreamWorker(t testing.TB) *parent {
	py := os.Getenv("MONTY_TEST_PYTHON")
	if py == "" {
		if testing.Short() {
			t.Skip("needs upstream's worker (the client environment): -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatal("MONTY_TEST_PYTHON is not set: the differential tests run upstream's worker from the client environment; " +
			"run `eval \"$(scripts/pyclients.sh env)\"` from the repository root (scripts/test.sh does this)")
	}
	cmd := exec.Command(filepath.Join(filepath.Dir(py), "monty"), "subprocess")
	cmd.Env = []string{} // as pydantic-monty starts it
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	// A pipe of our own rather than StdoutPipe: Wait closes that one when
	// the process exits, which can be before its last events are read.
	out, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = w
	require.NoError(t, cmd.Start())
	_ = w.Close() // the worker holds the write end; its exit is our EOF
	t.Cleanup(func() { _ = out.Close() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	p := &parent{t: t, conn: protocol.NewStreamConn(out, in, 0), raw: in, done: done}
	p.stop = func() { _ = in.Close() }
	t.Cleanup(func() {
		p.stop()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return p
}

func (p *parent) send(req *pb.ParentRequest) {
	p.t.Helper()
	require.NoError(p.t, protocol.Send(context.Background(), p.conn, req))
}

// recv returns the next event, or nil when the worker closed its output.
func (p *parent) recv() *pb.ChildEvent {
	p.t.Helper()
	ev, err := protocol.ReadEvent(context.Background(), p.conn)
	if errors.Is(err, io.EOF) {
		return nil
	}
	require.NoError(p.t, err)
	return ev
}

// turn sends req and returns every event up to and including the
// turn-ending one (or up to EOF).
func (p *parent) turn(req *pb.ParentRequest) []*pb.ChildEvent {
	p.t.Helper()
	p.send(req)
	return p.events()
}

func (p *parent) events() []*pb.ChildEvent {
	p.t.Helper()
	var evs []*pb.ChildEvent
	for {
		ev := p.recv()
		if ev == nil {
			return evs
		}
		evs = append(evs, ev)
		if ev.GetPrint() == nil {
			return evs
		}
	}
}

// last is the turn-ending event of a turn.
func (p *parent) last(req *pb.ParentRequest) *pb.ChildEvent {
	p.t.Helper()
	evs := p.turn(req)
	require.NotEmpty(p.t, evs, "the worker closed its output")
	return evs[len(evs)-1]
}

// Requests, as the client builds them.

func configure(c *pb.Configure) *pb.ParentRequest {
	if c == nil {
		c = &pb.Configure{}
	}
	if c.ProtocolVersion == 0 {
		c.ProtocolVersion = protocol.Version
	}
	if c.ScriptName == "" {
		c.ScriptName = "main.py"
	}
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: c}}
}

func feed(code string) *pb.ParentRequest {
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: code, Values: &pb.Arena{}}}}
}

func feedInputs(code string, names []string, arena *pb.Arena, roots []uint32) *pb.ParentRequest {
	f := &pb.Feed{Code: code, Values: arena}
	for i, n := range names {
		f.Inputs = append(f.Inputs, &pb.NamedRef{Name: n, Value: roots[i]})
	}
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: f}}
}

func resumeReturn(callID uint32, arena *pb.Arena, root uint32) *pb.ParentRequest {
	return &pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{
		CallId: callID, Values: arena, Result: &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_ReturnValue{ReturnValue: root}},
	}}}
}

func resumeResult(callID uint32, r *pb.ExtFunctionResult) *pb.ParentRequest {
	return &pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{CallId: callID, Result: r, Values: &pb.Arena{}}}}
}

func request(kind string) *pb.ParentRequest {
	switch kind {
	case "dump":
		return &pb.ParentRequest{Kind: &pb.ParentRequest_Dump{Dump: &pb.Dump{}}}
	case "reset":
		return &pb.ParentRequest{Kind: &pb.ParentRequest_Reset_{Reset_: &pb.Reset{}}}
	case "shutdown":
		return &pb.ParentRequest{Kind: &pb.ParentRequest_Shutdown{Shutdown: &pb.Shutdown{}}}
	}
	panic(kind)
}

func load(state []byte) *pb.ParentRequest {
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Load{Load: &pb.Load{State: state}}}
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}
