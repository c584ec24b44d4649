package server_test

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/telemetry"
)

const key = "server-test-key-1"

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

type testServer struct {
	*server.Server
	http *httptest.Server
	url  string
}

func start(t *testing.T, st store.Store, mod func(*server.Options)) *testServer {
	t.Helper()
	opts := server.Options{Engine: testEngine(t), Store: st, SigningKey: []byte("signing-key-0123456789"), APIKeys: []string{key, "server-test-key-2"}, PoolSize: 1, Logger: slog.New(slog.DiscardHandler)}
	if mod != nil {
		mod(&opts)
	}
	if opts.Store != nil && opts.Keeper == nil {
		opts.Keeper = newKeeper(t, opts.Store)
	}
	s, err := server.New(context.Background(), opts)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return &testServer{Server: s, http: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/"}
}

type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func dial(t *testing.T, url string, header http.Header) (*client, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &client{t: t, ws: ws}, resp, nil
}

func (s *testServer) dial(t *testing.T) *client {
	c, _, err := dial(t, s.url, http.Header{"X-Api-Key": {key}})
	require.NoError(t, err)
	return c
}

func (c *client) sendRaw(typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.ws.Write(ctx, typ, b)
}

// turn sends req and returns the turn-ending event (nil if the server
// closed the connection).
func (c *client) turn(req *pb.ParentRequest) *pb.ChildEvent {
	c.t.Helper()
	b, err := proto.Marshal(req)
	require.NoError(c.t, err)
	if c.sendRaw(websocket.MessageBinary, b) != nil {
		return nil
	}
	return c.next()
}

func (c *client) next() *pb.ChildEvent {
	c.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, b, err := c.ws.Read(ctx)
		cancel()
		if err != nil {
			return nil
		}
		ev := &pb.ChildEvent{}
		require.NoError(c.t, proto.Unmarshal(b, ev))
		if ev.GetPrint() == nil {
			return ev
		}
	}
}

func configure(c *pb.Configure) *pb.ParentRequest {
	if c == nil {
		c = &pb.Configure{}
	}
	c.ProtocolVersion = protocol.Version
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: c}}
}

func feed(code string) *pb.ParentRequest {
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: code}}}
}

func load(id []byte) *pb.ParentRequest {
	return &pb.ParentRequest{Kind: &pb.ParentRequest_Load{Load: &pb.Load{State: id}}}
}

func value(t *testing.T, ev *pb.ChildEvent) object.Value {
	t.Helper()
	require.NotNil(t, ev.GetComplete(), "want a completed feed, got %v", ev)
	vs, err := protocol.DecodeValues(ev.GetComplete().GetValues(), ev.GetComplete().GetValue())
	require.NoError(t, err)
	return vs[0]
}

// session configures a stored session and returns its id.
func (c *client) session() []byte {
	ev := c.turn(configure(nil))
	require.NotNil(c.t, ev.GetOk())
	require.NotEmpty(c.t, ev.GetSessionId())
	return ev.GetSessionId()
}

func TestKeysAreCheckedAtTheUpgrade(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), nil)
	for _, h := range []http.Header{nil, {"X-Api-Key": {"wrong-key-000"}}, {"Authorization": {"Bearer wrong-key-000"}}} {
		_, resp, err := dial(t, s.url, h)
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	c, _, err := dial(t, s.url, http.Header{"Authorization": {"Bearer " + key}})
	require.NoError(t, err)
	assert.Equal(t, object.Int(4), value(t, c.turn(feedAfter(c, "2 + 2"))))
}

// feedAfter configures c's session (ephemeral) and returns a feed.
func feedAfter(c *client, code string) *pb.ParentRequest {
	c.turn(configure(&pb.Configure{Persistence: pb.Persistence_PERSISTENCE_EPHEMERAL}))
	return feed(code)
}

func TestStoredSessionsAndRecords(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := start(t, st, nil)
	b := start(t, st, nil) // another instance sharing the store
	c := a.dial(t)
	sid := c.session()
	value(t, c.turn(feed("x = [1]")))
	rec := c.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Dump{Dump: &pb.Dump{}}}).GetDumpResult().GetState()
	require.True(t, strings.HasPrefix(string(rec), "r-"), "%q", rec)
	value(t, c.turn(feed("x.append(2)")))
	require.NoError(t, c.ws.Close(websocket.StatusNormalClosure, "")) // parks the session

	require.Eventually(t, func() bool { return a.Connections() == 0 }, 5*time.Second, 10*time.Millisecond)
	d := b.dial(t)
	ev := d.turn(load(sid))
	require.NotNil(t, ev.GetOk(), "%v", ev)
	assert.Equal(t, sid, ev.GetSessionId(), "loading a session id continues that session")
	assert.Equal(t, object.List{object.Int(1), object.Int(2)}, value(t, d.turn(feed("x"))))

	e := b.dial(t)
	ev = e.turn(load(rec))
	require.NotNil(t, ev.GetOk(), "%v", ev)
	assert.NotEqual(t, sid, ev.GetSessionId(), "a record starts a new session")
	assert.Equal(t, object.List{object.Int(1)}, value(t, e.turn(feed("x"))))

	// Another key's namespace holds none of it.
	f, _, err := dial(t, b.url, http.Header{"X-Api-Key": {"server-test-key-2"}})
	require.NoError(t, err)
	assert.Contains(t, f.turn(load(rec)).GetError().GetException().GetMessage(), "no session or record")
}

func TestForgedAndDamagedRecordsAreRefused(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := start(t, st, nil)
	c := s.dial(t)
	c.session()
	value(t, c.turn(feed("secret = 1")))
	rec := c.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Dump{Dump: &pb.Dump{}}}).GetDumpResult().GetState()
	infos, err := st.List(context.Background())
	require.NoError(t, err)
	var stored string
	for _, in := range infos {
		if strings.HasSuffix(in.ID, string(rec)) {
			stored = in.ID
		}
	}
	require.NotEmpty(t, stored)
	obj, err := st.Get(context.Background(), stored)
	require.NoError(t, err)
	for name, blob := range map[string][]byte{
		"flipped byte": flip(obj.Data, len(obj.Data)-10),
		"truncated":    obj.Data[:len(obj.Data)/2],
		"empty":        {},
		"unsigned":     append([]byte("MV1S"), make([]byte, 32)...),
	} {
		_, err := st.Put(context.Background(), stored, blob, store.Cond{})
		require.NoError(t, err)
		d := s.dial(t)
		ev := d.turn(load(rec))
		require.NotNil(t, ev.GetError(), name)
		msg := ev.GetError().GetException().GetMessage()
		assert.Contains(t, msg, "record "+string(rec)+" is corrupt", name)
		assertKeptAside(t, st, stored, blob, msg)
	}
	// A blob signed with another key is refused the same way.
	other := start(t, st, func(o *server.Options) { o.SigningKey = []byte("another-signing-key-987") })
	_, err = st.Put(context.Background(), stored, obj.Data, store.Cond{})
	require.NoError(t, err)
	msg := other.dial(t).turn(load(rec)).GetError().GetException().GetMessage()
	assert.Contains(t, msg, "signature does not verify")
	assertKeptAside(t, st, stored, obj.Data, msg)
	// And dump bytes are never taken in place of an id.
	assert.Contains(t, s.dial(t).turn(load([]byte("MGW1 raw dump bytes"))).GetError().GetException().GetMessage(), "by id")
}

// assertKeptAside checks that msg names the copy of blob, the entry at
// storeID, and that the copy holds it while the original stays in place.
func assertKeptAside(t *testing.T, st store.Store, storeID string, blob []byte, msg string) {
	t.Helper()
	ns, id, _ := strings.Cut(storeID, "/")
	_, after, ok := strings.Cut(msg, "kept aside as \""+id+".corrupt.")
	require.True(t, ok, msg)
	copyID := ns + "/" + id + ".corrupt." + after[:16]
	kept, err := st.Get(context.Background(), copyID)
	require.NoError(t, err, msg)
	assert.Equal(t, blob, kept.Data, "the copy holds the damaged bytes")
	orig, err := st.Get(context.Background(), storeID)
	require.NoError(t, err)
	assert.Equal(t, blob, orig.Data, "the original is left in place")
}

func flip(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x40
	return out
}

func TestHostileFramesEndOnlyTheirConnection(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.MaxFrame = 4096 })
	good := s.dial(t)
	good.session()
	value(t, good.turn(feed("n = 1")))

	huge := s.dial(t)
	_ = huge.sendRaw(websocket.MessageBinary, make([]byte, 100_000)) // refused at its header: the write may fail midway
	assert.Nil(t, huge.next(), "an oversized frame closes the connection")

	text := s.dial(t)
	require.NoError(t, text.sendRaw(websocket.MessageText, []byte("hello")))
	ev := text.next()
	require.NotNil(t, ev)
	assert.Contains(t, ev.GetFatalError().GetMessage(), "binary")

	junk := s.dial(t)
	require.NoError(t, junk.sendRaw(websocket.MessageBinary, []byte{0xff, 0xff, 0xff}))
	assert.Contains(t, junk.next().GetError().GetException().GetMessage(), "malformed request")
	assert.Contains(t, junk.turn(feed("1")).GetError().GetException().GetMessage(), "session has not been configured")
	bad := junk.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: &pb.Configure{ProtocolVersion: 1}}})
	assert.Contains(t, bad.GetFatalError().GetMessage(), "unsupported protocol version 1")

	// Values nested 100,000 deep, and an int of a million digits.
	vals := s.dial(t)
	vals.turn(configure(&pb.Configure{Persistence: pb.Persistence_PERSISTENCE_EPHEMERAL}))
	deep := &pb.Arena{Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_List{List: &pb.Indexes{}}}}}
	for i := 1; i < 100_000; i++ {
		deep.Nodes = append(deep.Nodes, &pb.MontyNode{Kind: &pb.MontyNode_List{List: &pb.Indexes{Items: []uint32{uint32(i - 1)}}}})
	}
	in := func(code string, a *pb.Arena, root uint32) *pb.ParentRequest {
		return &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: code, Values: a, Inputs: []*pb.NamedRef{{Name: "v", Value: root}}}}}
	}
	assert.Nil(t, vals.turn(in("len(v)", deep, 99_999)), "a frame over the cap closes the connection")
	vals = s.dial(t)
	vals.turn(configure(&pb.Configure{Persistence: pb.Persistence_PERSISTENCE_EPHEMERAL}))
	million := new(big.Int).Exp(big.NewInt(10), big.NewInt(1_000_000), nil)
	a, roots, err := protocol.EncodeValues(object.IntFromBig(million))
	require.NoError(t, err)
	assert.Nil(t, vals.turn(in("v > 0", a, roots[0])), "415 KB of digits are over this server's 4 KiB frame cap")

	assert.Equal(t, object.Int(2), value(t, good.turn(feed("n + 1"))), "the other session goes on untouched")
}

func TestHostileValuesWithinTheFrameCap(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), nil)
	c := s.dial(t)
	c.turn(configure(&pb.Configure{Persistence: pb.Persistence_PERSISTENCE_EPHEMERAL}))
	in := func(code string, a *pb.Arena, root uint32) *pb.ParentRequest {
		return &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: code, Values: a, Inputs: []*pb.NamedRef{{Name: "v", Value: root}}}}}
	}
	deep := &pb.Arena{Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_List{List: &pb.Indexes{}}}}}
	for i := 1; i < 100_000; i++ {
		deep.Nodes = append(deep.Nodes, &pb.MontyNode{Kind: &pb.MontyNode_List{List: &pb.Indexes{Items: []uint32{uint32(i - 1)}}}})
	}
	assert.Contains(t, c.turn(in("len(v)", deep, 99_999)).GetError().GetException().GetMessage(), "nested more than 1000 levels")
	million := new(big.Int).Exp(big.NewInt(10), big.NewInt(1_000_000), nil)
	a, roots, err := protocol.EncodeValues(object.IntFromBig(million))
	require.NoError(t, err)
	assert.Equal(t, object.Bool(true), value(t, c.turn(in("v > 0", a, roots[0]))))
	assert.Equal(t, object.Int(1), value(t, c.turn(feed("1"))), "the session goes on")
}

func TestCapacity(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.MaxConns, o.MaxConnsPerKey = 3, 2 })
	s.dial(t)
	s.dial(t)
	_, resp, err := dial(t, s.url, http.Header{"X-Api-Key": {key}})
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the key's limit")
	_, _, err = dial(t, s.url, http.Header{"X-Api-Key": {"server-test-key-2"}})
	require.NoError(t, err, "another key has room")
	_, resp, err = dial(t, s.url, http.Header{"X-Api-Key": {"server-test-key-2"}})
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the server's limit")
}

// TestIdleConnections: a thousand connections that never send cost no
// interpreter, do not stop others from being served, and are closed at the
// idle timeout.
func TestIdleConnections(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.IdleTimeout = 2 * time.Second; o.MaxConnsPerKey = 2000; o.MaxConns = 2000 })
	var before goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	const n = 1000
	for range n {
		s.dial(t)
	}
	require.Eventually(t, func() bool { return s.Connections() == n }, 10*time.Second, 10*time.Millisecond)
	var during goruntime.MemStats
	goruntime.ReadMemStats(&during)
	// Each idle connection holds buffers, not an interpreter (tens of MB).
	assert.Less(t, int64(during.HeapAlloc)-int64(before.HeapAlloc), int64(200<<20))
	c := s.dial(t)
	assert.Equal(t, object.Int(3), value(t, c.turn(feedAfter(c, "1 + 2"))))
	require.Eventually(t, func() bool { return s.Connections() <= 1 }, 15*time.Second, 50*time.Millisecond, "idle connections are closed")
}

func TestTurnTimeoutClosesOnlyThatConnection(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.TurnTimeout = 300 * time.Millisecond })
	slow := s.dial(t)
	other := s.dial(t)
	other.session()
	assert.Nil(t, slow.turn(feedAfter(slow, "while True:\n    pass")), "the connection is closed")
	assert.Equal(t, object.Int(1), value(t, other.turn(feed("1"))))
}

func TestDisconnectMidSuspensionParksTheSession(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := start(t, st, nil)
	c := s.dial(t)
	sid := c.session()
	ev := c.turn(feed("a = 5\nb = ask(a)\na + b"))
	require.NotNil(t, ev.GetFunctionCall())
	_ = c.ws.CloseNow()
	require.Eventually(t, func() bool { return s.Connections() == 0 }, 5*time.Second, 10*time.Millisecond)
	d := s.dial(t)
	ev = d.turn(load(sid))
	require.NotNil(t, ev.GetFunctionCall(), "the suspension is announced again: %v", ev)
	a, roots, err := protocol.EncodeValues(object.Int(37))
	require.NoError(t, err)
	done := d.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{
		CallId: ev.GetFunctionCall().GetCallId(), Values: a, Result: &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_ReturnValue{ReturnValue: roots[0]}},
	}}})
	assert.Equal(t, object.Int(42), value(t, done))
}

func TestDrainHandsSessionsBack(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := start(t, st, nil)
	b := start(t, st, nil)
	idle := a.dial(t)
	sid := idle.session()
	value(t, idle.turn(feed("v = 'kept'")))
	eph := a.dial(t)
	eph.turn(configure(&pb.Configure{Persistence: pb.Persistence_PERSISTENCE_EPHEMERAL}))

	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		drained <- a.Shutdown(ctx)
	}()
	require.Eventually(t, a.Draining, 5*time.Second, 5*time.Millisecond)
	_, resp, err := dial(t, a.url, http.Header{"X-Api-Key": {key}})
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "no new connections while draining")

	ev := idle.turn(feed("v"))
	require.NotNil(t, ev.GetShutdown(), "%v", ev)
	assert.Equal(t, sid, ev.GetShutdown().GetDump())
	ev = eph.turn(feed("1"))
	require.NotNil(t, ev.GetShutdown())
	assert.Nil(t, ev.GetShutdown().Dump, "an ephemeral session has nothing to load")
	select {
	case err := <-drained:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return once every session was handed back")
	}
	c := b.dial(t)
	require.NotNil(t, c.turn(load(sid)).GetOk())
	assert.Equal(t, object.Str("kept"), value(t, c.turn(feed("v"))))
}

func TestProfiles(t *testing.T) {
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"double": {Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
			n, _ := args[0].(object.Int)
			return n * 2, nil
		}},
		"later": {Async: true, Func: func(_ context.Context, _ []object.Value, _ []object.Pair) (object.Value, error) {
			return object.Str("done"), nil
		}},
		"fail": {Func: func(context.Context, []object.Value, []object.Pair) (object.Value, error) {
			return nil, &runtime.Exception{Type: "KeyError", Message: "nope"}
		}},
	}}
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) {
		o.Profiles = map[string]server.Profile{
			"tools": {Host: host, Limits: runtime.Limits{MaxMemory: 16 << 20, MaxDuration: 500 * time.Millisecond}},
		}
	})
	c := s.dial(t)
	ev := c.turn(configure(&pb.Configure{Profile: proto.String("nope")}))
	assert.Contains(t, ev.GetError().GetException().GetMessage(), `unknown profile "nope"`)
	ev = c.turn(configure(&pb.Configure{Profile: proto.String("tools"), Limits: &pb.ResourceLimits{MaxMemoryBytes: proto.Uint64(1 << 32)}}))
	require.NotNil(t, ev.GetOk())
	assert.Equal(t, object.Int(42), value(t, c.turn(feed("double(21)"))), "a profile's host function is served by the server")
	assert.Equal(t, object.Str("done"), value(t, c.turn(feed("await later()"))))
	assert.Equal(t, "KeyError", c.turn(feed("fail()")).GetError().GetException().GetExcType())
	assert.Equal(t, "MemoryError", c.turn(feed("x = [0] * 10_000_000")).GetError().GetException().GetExcType(), "the profile's memory ceiling")
	assert.Equal(t, "TimeoutError", c.turn(feed("while True:\n    pass")).GetError().GetException().GetExcType(), "the profile's duration ceiling")
	assert.NotNil(t, c.turn(feed("other(1)")).GetFunctionCall(), "what the profile does not serve goes to the client")
}

func TestNoStore(t *testing.T) {
	s := start(t, nil, nil)
	c := s.dial(t)
	ev := c.turn(configure(nil))
	require.NotNil(t, ev.GetOk())
	assert.Empty(t, ev.GetSessionId(), "without a store nothing is stored")
	assert.Contains(t, c.turn(&pb.ParentRequest{Kind: &pb.ParentRequest_Dump{Dump: &pb.Dump{}}}).GetError().GetException().GetMessage(), "stores no sessions")
	_, err := server.New(context.Background(), server.Options{Engine: testEngine(t), Store: memstore.New(memstore.Options{})})
	assert.True(t, errors.Is(err, server.ErrConfig), "a store needs a signing key")
}

// TestTraceContext: the upgrade request's traceparent, and a request's
// trace_parent, parent the monty.execute span of the request; store
// operations get spans of their own.
func TestTraceContext(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel := telemetry.New(telemetry.Options{TracerProvider: tp})
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.Telemetry = tel })

	const upgradeTrace = "0af7651916cd43dd8448eb211c80319c"
	c, _, err := dial(t, s.url, http.Header{"X-Api-Key": {key}, "Traceparent": {"00-" + upgradeTrace + "-b7ad6b7169203331-01"}})
	require.NoError(t, err)
	c.session()
	value(t, c.turn(feed("1")))
	const requestTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	req := feed("2")
	req.TraceParent = proto.String("00-" + requestTrace + "-00f067aa0ba902b7-01")
	value(t, c.turn(req))
	_ = c.ws.Close(websocket.StatusNormalClosure, "")
	require.Eventually(t, func() bool { return s.Connections() == 0 }, 5*time.Second, 10*time.Millisecond)

	var traces []string
	stores := 0
	for _, sp := range exp.GetSpans() {
		switch {
		case sp.Name == telemetry.SpanExecute:
			traces = append(traces, sp.SpanContext.TraceID().String())
		case strings.HasPrefix(sp.Name, "monty.store."):
			stores++
		}
	}
	assert.Equal(t, []string{upgradeTrace, requestTrace}, traces)
	assert.Positive(t, stores, "parking the session is traced")
}

// TestLoadRightAfterClose: a client that closes a connection and at once
// loads its session on a new one finds it, though the server parks it
// only as the old connection ends.
func TestLoadRightAfterClose(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), nil)
	c := s.dial(t)
	sid := c.session()
	for i := range 5 {
		value(t, c.turn(feed("n = "+string(rune('0'+i)))))
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
		c = s.dial(t)
		ev := c.turn(load(sid))
		require.NotNil(t, ev.GetOk(), "round %d: %v", i, ev)
		assert.Equal(t, object.Int(i), value(t, c.turn(feed("n"))))
	}
}

// TestDurationCeilings: the server's duration ceiling is a feed budget: it
// bounds a session that asks for none, or for more, or only for a turn
// budget, and the TimeoutError names it; a turn budget the client asks
// below it fires as the turn's. (The turn timeout, the other ceiling,
// closes the connection: TestTurnTimeoutClosesOnlyThatConnection.)
func TestDurationCeilings(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) {
		o.Profiles = map[string]server.Profile{"": {Limits: runtime.Limits{MaxDuration: 300 * time.Millisecond}}}
	})
	ms := func(n uint64) *uint64 { return proto.Uint64(n * 1000) }
	for _, tc := range []struct {
		asked *pb.ResourceLimits
		want  string
	}{
		{nil, `^feed time limit exceeded: [0-9.]+m?s > 300ms$`},
		{&pb.ResourceLimits{MaxFeedDurationMicros: ms(10_000)}, `^feed time limit exceeded: [0-9.]+m?s > 300ms$`},
		{&pb.ResourceLimits{MaxTurnDurationMicros: ms(10_000)}, `^feed time limit exceeded: [0-9.]+m?s > 300ms$`},
		{&pb.ResourceLimits{MaxTurnDurationMicros: ms(100)}, `^turn time limit exceeded: [0-9.]+m?s > 100ms$`},
	} {
		c := s.dial(t)
		require.NotNil(t, c.turn(configure(&pb.Configure{Limits: tc.asked})).GetOk())
		exc := c.turn(feed("while True:\n    pass")).GetError().GetException()
		require.NotNil(t, exc, "asked %v", tc.asked)
		assert.Equal(t, "TimeoutError", exc.GetExcType())
		assert.Regexp(t, tc.want, exc.GetMessage(), "asked %v", tc.asked)
	}
}

func TestFailedUpgradesBackOff(t *testing.T) {
	guard := apikey.NewGuard(apikey.GuardOptions{MaxFailures: 2})
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.Guard = guard })
	for i := range 3 {
		_, resp, err := dial(t, s.url, http.Header{"X-Api-Key": {"guess-000" + string(rune('0'+i))}})
		require.Error(t, err)
		require.NotNil(t, resp)
		if i < 2 {
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			continue
		}
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	}
	c := s.dial(t) // a good key still works
	assert.Equal(t, object.Int(2), value(t, c.turn(feedAfter(c, "1 + 1"))))
}
