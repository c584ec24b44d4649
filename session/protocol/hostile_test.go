package protocol_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// serveBytes runs a worker over input (as a parent's whole output) and
// returns the events it wrote and Serve's error.
func serveBytes(t testing.TB, input []byte, maxFrame int) ([]*pb.ChildEvent, error) {
	w := protocol.NewWorker(protocol.WorkerOptions{Engine: testEngine(t)})
	defer w.Close(context.Background())
	var out bytes.Buffer
	err := protocol.Serve(context.Background(), protocol.NewStreamConn(bytes.NewReader(input), &out, maxFrame), w)
	var evs []*pb.ChildEvent
	for out.Len() > 0 {
		b, rerr := protocol.ReadFrame(&out, 1<<30)
		require.NoError(t, rerr)
		ev := &pb.ChildEvent{}
		require.NoError(t, proto.Unmarshal(b, ev))
		evs = append(evs, ev)
	}
	return evs, err
}

func frame(payload []byte) []byte {
	var b bytes.Buffer
	_ = protocol.WriteFrame(&b, payload)
	return b.Bytes()
}

func TestBrokenFramesAreFatal(t *testing.T) {
	ok := frame(mustMarshal(t, configure(nil)))
	cases := map[string]struct {
		input []byte
		want  error
	}{
		"truncated payload": {slices.Concat(ok, []byte{100, 0, 0, 0, 1, 2, 3}), protocol.ErrBadFrame},
		"truncated length":  {slices.Concat(ok, []byte{100, 0}), protocol.ErrBadFrame},
		// Four gigabytes announced: refused before anything is allocated.
		"oversized": {slices.Concat(ok, []byte{0xff, 0xff, 0xff, 0xff}), protocol.ErrFrameTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			evs, err := serveBytes(t, tc.input, 1<<20)
			require.ErrorIs(t, err, tc.want)
			require.Len(t, evs, 2)
			assert.NotNil(t, evs[0].GetOk())
			assert.Contains(t, evs[1].GetFatalError().GetMessage(), "malformed request frame")
		})
	}
}

func TestUndecodableAndUnknownRequestsAreRefusedNotFatal(t *testing.T) {
	// A frame with only a field this schema does not have (tag 15), one that
	// is not protobuf at all, then a valid feed: the session goes on.
	unknown := protowire.AppendTag(nil, 15, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("?"))
	var in []byte
	in = append(in, frame(mustMarshal(t, configure(nil)))...)
	in = append(in, frame(unknown)...)
	in = append(in, frame([]byte{0xff, 0xff, 0xff})...)
	in = append(in, frame(mustMarshal(t, feed("6 * 7")))...)
	evs, err := serveBytes(t, in, 0)
	require.NoError(t, err)
	require.Len(t, evs, 4)
	assert.Contains(t, evs[1].GetError().GetException().GetMessage(), "request has no kind")
	assert.Contains(t, evs[2].GetError().GetException().GetMessage(), "malformed request")
	vs, err := protocol.DecodeValues(evs[3].GetComplete().GetValues(), evs[3].GetComplete().GetValue())
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), vs[0])
}

func TestDisconnectMidSuspension(t *testing.T) {
	p := ourWorker(t)
	p.turn(configure(nil))
	ev := p.last(feed("x = fetch()\nx"))
	require.NotNil(t, ev.GetFunctionCall())
	p.stop() // the parent goes away while the feed waits for it
	select {
	case err := <-p.done:
		require.NoError(t, err)
		p.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop when its parent went away")
	}
}

func TestWorkerStopsOnCancellation(t *testing.T) {
	w := protocol.NewWorker(protocol.WorkerOptions{Engine: testEngine(t)})
	defer w.Close(context.Background())
	// A configured session running an endless loop is stopped by ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var evs []*pb.ChildEvent
	send := func(ev *pb.ChildEvent) error { evs = append(evs, ev); return nil }
	_, err := w.Handle(ctx, configure(nil), send)
	require.NoError(t, err)
	_, err = w.Handle(ctx, feed("while True:\n    pass"), send)
	require.NoError(t, err)
	require.NotNil(t, evs[len(evs)-1].GetError(), "an endless loop under a cancelled context ends in an error event")
}

func TestValueBudgets(t *testing.T) {
	deep, root := deepList(object.MaxDepth + 2)
	_, err := protocol.DecodeValues(deep, root)
	require.ErrorIs(t, err, protocol.ErrBadValue)

	ok, root := deepList(object.MaxDepth + 1)
	_, err = protocol.DecodeValues(ok, root)
	require.NoError(t, err, "1,001 nested lists are the most a value may have, as in object's codec")

	bomb, root := doubling(64)
	_, err = protocol.DecodeValues(bomb, root)
	require.ErrorIs(t, err, protocol.ErrBadValue)

	// The same node used by many roots counts for each.
	shared, root := doubling(20) // 2^20 leaves each
	roots := []uint32{root, root, root, root, root}
	_, err = protocol.DecodeValues(shared, roots...)
	require.ErrorIs(t, err, protocol.ErrBadValue)

	for name, a := range map[string]*pb.Arena{
		"forward reference": {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_List{List: &pb.Indexes{Items: []uint32{0}}}}}},
		"empty node":        {Nodes: []*pb.MontyNode{{}}},
		"short uuid":        {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_Module{Module: &pb.ModuleNode{Name: "m", Id: &pb.Uuid{Data: []byte{1}}}}}}},
		"builtin with id":   {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_Type{Type: &pb.Type{Name: "int", Origin: pb.TypeOrigin_TYPE_ORIGIN_BUILTIN, Id: &pb.Uuid{Data: make([]byte, 16)}}}}}},
		"no origin":         {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_Type{Type: &pb.Type{Name: "A"}}}}},
		"instance of int": {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_Int{Int: 1}},
			{Kind: &pb.MontyNode_ClassInstance{ClassInstance: &pb.ClassInstanceNode{ClassType: 0, InstanceId: &pb.Uuid{Data: make([]byte, 16)}}}}}},
		"named tuple mismatch": {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_NamedTuple{NamedTuple: &pb.NamedTupleNode{TypeName: "t", FieldNames: []string{"a"}}}}}},
		"complex half":         {Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_Complex{Complex: &pb.Complex{Real: proto.Float64(1)}}}}},
	} {
		_, err := protocol.DecodeValues(a, uint32(len(a.Nodes)-1))
		assert.ErrorIs(t, err, protocol.ErrBadValue, name)
	}
	_, err = protocol.DecodeValues(&pb.Arena{Nodes: []*pb.MontyNode{{Kind: &pb.MontyNode_Cycle{Cycle: "[...]"}}}}, 0)
	require.ErrorIs(t, err, protocol.ErrOutputOnly)
}

func TestValuesRoundTrip(t *testing.T) {
	tz := "UTC"
	off := 0
	class := object.ClassType{Name: "P", ID: object.NewUUID(), HostDefined: true, IsDataclass: true}
	vs := []object.Value{
		object.None{}, object.Bool(true), object.Int(-5), object.IntFromBig(new(big.Int).Lsh(big.NewInt(1), 200)), object.Float(2.5),
		object.Str("é"), object.Bytes{0, 1}, object.List{object.Int(1), object.Tuple{object.Str("a")}},
		object.Dict{{Key: object.Tuple{object.Int(1)}, Value: object.Set{object.Int(2)}}}, object.FrozenSet{object.Int(3)},
		object.NamedTuple{TypeName: "t", Fields: []string{"a"}, Values: []object.Value{object.Int(1)}},
		object.Date{Year: 2024, Month: 2, Day: 29}, object.DateTime{Year: 2024, Month: 1, Day: 1, Offset: &off, TZName: &tz},
		object.Time{Hour: 1, Fold: 1}, object.NewTimeDelta(-1, 5, 7), object.TimeZone{Offset: 3600},
		object.Exception{Type: "ValueError", Message: "m", HasMessage: true}, object.TypeObject("int"),
		object.Instance{Class: class, ID: object.NewUUID(), Attrs: []object.Pair{{Key: object.Str("x"), Value: object.Int(1)}}},
		class, object.Function{Name: "f"}, object.BuiltinFunction("len"), object.Path("/a"),
		object.File{Path: "/f", Mode: "r", Position: 3}, object.Complex{Real: 1, Imag: math.Copysign(0, -1)}, object.Ellipsis{}, object.NotImplemented{},
		object.Module{Name: "m", ID: object.NewUUID()}, object.Decimal("1.20"),
	}
	arena, roots, err := protocol.EncodeValues(vs...)
	require.NoError(t, err)
	back, err := protocol.DecodeValues(arena, roots...)
	require.NoError(t, err)
	for i := range vs {
		assert.True(t, object.Equal(vs[i], back[i]), "%d: %s != %s", i, object.Repr(vs[i]), object.Repr(back[i]))
	}
}

// FuzzDecodeValues: any arena bytes decode to values or an error, never a
// panic, within the node budget.
func FuzzDecodeValues(f *testing.F) {
	a, roots, _ := protocol.EncodeValues(object.List{object.Dict{{Key: object.Str("k"), Value: object.Tuple{object.Int(1)}}}})
	b, _ := proto.Marshal(a)
	f.Add(b, roots[0])
	deep, r := deepList(50)
	b, _ = proto.Marshal(deep)
	f.Add(b, r)
	f.Fuzz(func(t *testing.T, data []byte, root uint32) {
		arena := &pb.Arena{}
		if proto.Unmarshal(data, arena) != nil {
			return
		}
		vs, err := protocol.DecodeValues(arena, root)
		if err != nil {
			return
		}
		if _, _, err := protocol.EncodeValues(vs...); err != nil {
			t.Fatalf("a decoded value does not encode: %v", err)
		}
	})
}

// FuzzServe: any byte stream sent to a worker ends in events, a fatal
// error or EOF, never a panic or a hang.
func FuzzServe(f *testing.F) {
	var seed []byte
	for _, r := range []*pb.ParentRequest{configure(nil), feed("x = f(1)\nx"), resumeResult(0, &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_NotFound{NotFound: "f"}}), request("dump")} {
		b, _ := proto.Marshal(r)
		seed = append(seed, frame(b)...)
	}
	f.Add(seed)
	f.Add(append(frame([]byte{0x0a, 0x02, 0x48, 0x06}), 1, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := serveBytes(t, data, 1<<16)
		if err != nil && !errors.Is(err, protocol.ErrBadFrame) && !errors.Is(err, protocol.ErrFrameTooLarge) && !errors.Is(err, protocol.ErrFatal) {
			t.Fatalf("unexpected error: %v", err)
		}
	})
}

func TestFrameLengthIsLittleEndian(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, protocol.WriteFrame(&b, []byte("abc")))
	assert.Equal(t, uint32(3), binary.LittleEndian.Uint32(b.Bytes()))
	got, err := protocol.ReadFrame(&b, 10)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
	_, err = protocol.ReadFrame(&b, 10)
	assert.ErrorIs(t, err, io.EOF)
}

func TestPrintBatching(t *testing.T) {
	texts := func(evs []*pb.ChildEvent) []string {
		var out []string
		for _, ev := range evs {
			if p := ev.GetPrint(); p != nil {
				var b strings.Builder
				for _, s := range p.GetSegments() {
					b.WriteString(s.GetText())
				}
				out = append(out, b.String())
			}
		}
		return out
	}
	// A timer sends what waited for the interval while the code goes on.
	p := ourWorker(t)
	p.turn(configure(&pb.Configure{PrintFlushIntervalMs: proto.Uint32(20)}))
	evs := p.turn(feed("print('a')\nn = 0\nwhile n < 3000000:\n    n += 1\nprint('b')"))
	assert.Equal(t, []string{"a\n", "b\n"}, texts(evs))
	require.NotNil(t, evs[len(evs)-1].GetComplete())

	// An interval of days still holds back no more than 64 KiB.
	p = ourWorker(t)
	p.turn(configure(&pb.Configure{PrintFlushIntervalMs: proto.Uint32(1 << 31)}))
	evs = p.turn(feed("for i in range(3000):\n    print('x' * 99)"))
	got := texts(evs)
	assert.GreaterOrEqual(t, len(got), 4, "300 KB of output in at least four events")
	assert.Equal(t, 300_000, len(strings.Join(got, "")))

	// Interval 0: one event per line, in order across the streams.
	p = ourWorker(t)
	p.turn(configure(&pb.Configure{PrintFlushIntervalMs: proto.Uint32(0)}))
	evs = p.turn(feed("import sys\nprint('o1')\nprint('e1', file=sys.stderr)\nprint('o2')"))
	assert.Equal(t, []string{"o1\n", "e1\n", "o2\n"}, texts(evs))
}

// TestInterpreterDeathIsAnError: what upstream's worker reports by dying
// (exit code 65 when an allocation fails), ours reports as an error event;
// the worker goes on, and after Reset serves a new session.
func TestInterpreterDeathIsAnError(t *testing.T) {
	ctx := context.Background()
	small, err := runtime.NewEngine(ctx, runtime.WithMaxMemoryPages(1024)) // 64 MiB of linear memory
	require.NoError(t, err)
	defer small.Close(ctx)
	w := protocol.NewWorker(protocol.WorkerOptions{Engine: small})
	defer w.Close(ctx)
	turn := func(req *pb.ParentRequest) *pb.ChildEvent {
		var last *pb.ChildEvent
		outcome, err := w.Handle(ctx, req, func(ev *pb.ChildEvent) error { last = ev; return nil })
		require.NoError(t, err)
		require.Equal(t, protocol.Continue, outcome)
		return last
	}
	turn(configure(nil))
	ev := turn(feed("x = b'a' * (200 * 1024 * 1024)"))
	require.NotNil(t, ev.GetError(), "%v", ev)
	assert.Equal(t, "MemoryError", ev.GetError().GetException().GetExcType())
	assert.Contains(t, ev.GetError().GetException().GetMessage(), "the session is lost")
	assert.Contains(t, turn(feed("1")).GetError().GetException().GetMessage(), "send Reset")
	_, err = w.Snapshot(ctx)
	assert.Error(t, err, "a lost session has nothing to store (a server would otherwise park an empty one)")
	require.NotNil(t, turn(request("reset")).GetOk())
	turn(configure(nil))
	vs, err := protocol.DecodeValues(turn(feed("6 * 7")).GetComplete().GetValues(), 0)
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), vs[0])
}
