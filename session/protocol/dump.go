package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// dumpMagic starts every dump a Worker writes. The dump is the session's
// configuration and clocks (a CBOR dict, object's encoding) followed by
// the interpreter's own dump of the REPL, paused feed included:
//
//	"MGW1" uvarint(len(header)) header repl-dump
//
// restore also takes Monty's own dump bytes, as upstream's worker writes
// them (runtime.LoadMontyREPL). Upstream's worker does not take this
// container (see docs/conformance.md), though the interpreter dump inside
// it is in Monty's own format.
var dumpMagic = []byte("MGW1")

// ErrBadDump reports Load bytes that are not a dump of this worker.
var ErrBadDump = errors.New("not a monty dump")

func (w *Worker) dump(ctx context.Context) *pb.ChildEvent {
	if w.cfg == nil {
		return Violation("Dump without a session")
	}
	if w.lost != nil {
		return errorEvent("RuntimeError", "the session was lost: "+w.lost.Error())
	}
	if w.awaitingStubs != nil {
		return errorEvent("RuntimeError", "cannot dump while a feed awaits its module stubs")
	}
	state, err := w.Snapshot(ctx)
	if err != nil {
		return errorEvent("RuntimeError", "dump failed: "+err.Error())
	}
	return &pb.ChildEvent{Kind: &pb.ChildEvent_DumpResult{DumpResult: &pb.DumpResult{State: state}}}
}

// Snapshot returns the session as dump bytes (what Dump answers with).
func (w *Worker) Snapshot(ctx context.Context) ([]byte, error) {
	live, err := w.Live(ctx)
	if err != nil {
		return nil, err
	}
	var repl []byte
	if live.Feed != nil {
		repl, err = live.Feed.Dump(ctx)
	} else {
		repl, err = live.REPL.Dump(ctx)
	}
	if err != nil {
		return nil, err
	}
	return joinDump(live.Header, repl), nil
}

// Live is a worker's session as a store keeps it: its header (the
// configuration and clocks, as a dump holds them) and the interpreter
// state the worker runs, for a store that dumps the REPL itself
// (session.Driven).
type Live struct {
	// Header is the configuration and clocks, as a dump starts with them.
	Header []byte
	// Stable is Header without the clocks, which move at every turn: a
	// turn that changed nothing leaves it as it was.
	Stable []byte
	// Interpreter runs REPL, the session's.
	Interpreter *runtime.Interpreter
	REPL        *runtime.REPL
	// Feed is the suspended feed, nil when the REPL is idle.
	Feed *runtime.Execution
	// Limits are the interpreter's limits between feeds.
	Limits runtime.Limits
}

// Live returns the session's header and interpreter state, which stay the
// worker's: use them before the next request.
func (w *Worker) Live(ctx context.Context) (*Live, error) {
	switch {
	case w.cfg == nil:
		return nil, errors.New("no session")
	case w.lost != nil:
		// An empty REPL is not this session: nothing to store.
		return nil, fmt.Errorf("the session was lost: %w", w.lost)
	}
	if err := w.ensureREPL(ctx, ""); err != nil {
		return nil, err
	}
	header, stable, err := w.headers()
	if err != nil {
		return nil, err
	}
	return &Live{Header: header, Stable: stable, Interpreter: w.it, REPL: w.repl, Feed: w.exec, Limits: w.limits()}, nil
}

// headers are the session's configuration and clocks, as a dump starts,
// and the same without the clocks.
func (w *Worker) headers() (header, stable []byte, err error) {
	cfg, err := proto.Marshal(w.cfg)
	if err != nil {
		return nil, nil, err
	}
	rest := object.Dict{
		{Key: object.Str("checked"), Value: object.Str(w.checkCtx.Code)},
		{Key: object.Str("pending"), Value: object.Str(w.pendingCode)},
		{Key: object.Str("cwd"), Value: object.Str(w.cwd)},
		{Key: object.Str("stubs"), Value: stringDict(w.stubs)},
		{Key: object.Str("asked"), Value: stringDict(boolsToStrings(w.asked))},
	}
	configure := object.Pair{Key: object.Str("configure"), Value: object.Bytes(cfg)}
	clocks := object.Dict{
		{Key: object.Str("total_us"), Value: object.Int(w.totalExec.Microseconds())},
		{Key: object.Str("feed_us"), Value: object.Int(w.feedExec.Microseconds())},
	}
	if header, err = object.Encode(append(append(object.Dict{configure}, clocks...), rest...)); err != nil {
		return nil, nil, err
	}
	stable, err = object.Encode(append(object.Dict{configure}, rest...))
	return header, stable, err
}

// joinDump is a dump of header and the REPL's own dump.
func joinDump(header, repl []byte) []byte {
	out := make([]byte, 0, len(dumpMagic)+binary.MaxVarintLen64+len(header)+len(repl))
	out = append(out, dumpMagic...)
	out = binary.AppendUvarint(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, repl...)
}

// LoadLive starts the session from a header and a REPL dump kept apart
// (Live's, as a store keeps them), as Load does from dump bytes: the event
// answering the load. A nil header is a session of the default
// configuration (one another surface made).
func (w *Worker) LoadLive(ctx context.Context, header, repl []byte) *pb.ChildEvent {
	if header == nil {
		cfg, err := proto.Marshal(&pb.Configure{ProtocolVersion: Version})
		if err == nil {
			header, err = object.Encode(object.Dict{{Key: object.Str("configure"), Value: object.Bytes(cfg)}})
		}
		if err != nil {
			return errorEvent("RuntimeError", "loading the session failed: "+err.Error())
		}
	}
	return w.load(ctx, joinDump(header, repl))
}

// restoreMonty restores Monty's own dump bytes, as upstream's worker
// writes them: the REPL comes back (suspended or not) under the session's
// configuration, or a default one; what the dump holds for upstream's type
// checker is not read, so a type-checked session checks its next snippets
// without the earlier ones' context.
func (w *Worker) restoreMonty(ctx context.Context, state []byte) error {
	cfg := w.cfg
	if cfg == nil {
		cfg = &pb.Configure{ProtocolVersion: Version}
	}
	return w.restoreREPL(ctx, cfg, state, (*runtime.Interpreter).LoadMontyREPL)
}

// restoreREPL replaces the session with the REPL load restores from b.
func (w *Worker) restoreREPL(ctx context.Context, cfg *pb.Configure, b []byte,
	load func(*runtime.Interpreter, context.Context, []byte) (*runtime.REPL, *runtime.Execution, error)) error {
	it, err := w.interpreter(ctx)
	if err != nil {
		return err
	}
	w.dropSession()
	repl, ex, err := load(it, ctx, b)
	if err != nil {
		return err
	}
	w.cfg, w.repl, w.exec = cfg, repl, ex
	return nil
}

// splitDump parses a dump into its header fields and the REPL's bytes.
func splitDump(b []byte) (map[string]object.Value, []byte, error) {
	if !bytes.HasPrefix(b, dumpMagic) {
		return nil, nil, ErrBadDump
	}
	b = b[len(dumpMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: truncated header", ErrBadDump)
	}
	hv, err := object.Decode(b[k : k+int(n)])
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadDump, err)
	}
	d, ok := hv.(object.Dict)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the header is not a dict", ErrBadDump)
	}
	fields := map[string]object.Value{}
	for _, p := range d {
		if k, ok := p.Key.(object.Str); ok {
			fields[string(k)] = p.Value
		}
	}
	return fields, b[k+int(n):], nil
}

func (w *Worker) load(ctx context.Context, state []byte) *pb.ChildEvent {
	if w.repl != nil || w.lost != nil {
		return Violation("Load while a session already exists")
	}
	if err := w.restore(ctx, state); err != nil {
		return Violation("failed to load session: %v", err)
	}
	if w.opts.Restored != nil {
		w.opts.Restored(w.cfg)
	}
	ev := okEvent()
	if w.exec != nil {
		var err error
		if ev, err = w.reannounce(ctx); err != nil {
			return errorEvent("RuntimeError", err.Error())
		}
	}
	name := w.scriptName()
	ev.RestoredScriptName = &name
	return ev
}

// reannounce is the event answering the load of a suspended feed: its
// suspension, announced again, unless it is a call that waits for a
// person's approval, which the worker asks about again (WorkerOptions.Approve)
// before the feed goes on to its next suspension or its end.
func (w *Worker) reannounce(ctx context.Context) (*pb.ChildEvent, error) {
	if c, ok := w.exec.Pause().(*runtime.FunctionCall); ok && c.ObjectID != nil && w.opts.Host != nil {
		if a, ok := w.hostAnswer(ctx, c); ok {
			return w.resume(ctx, a), nil
		}
	}
	return w.suspension(w.exec.Pause())
}

// restore replaces the worker's session with the one in state (dump bytes).
// On error the worker keeps no session.
func (w *Worker) restore(ctx context.Context, state []byte) error {
	if bytes.HasPrefix(state, []byte(runtime.MontyDumpMagic)) {
		return w.restoreMonty(ctx, state)
	}
	fields, replDump, err := splitDump(state)
	if err != nil {
		return err
	}
	cfgBytes, _ := fields["configure"].(object.Bytes)
	cfg := &pb.Configure{}
	if err := proto.Unmarshal(cfgBytes, cfg); err != nil {
		return fmt.Errorf("%w: configuration: %v", ErrBadDump, err)
	}
	if err := w.restoreREPL(ctx, cfg, replDump, (*runtime.Interpreter).LoadREPL); err != nil {
		return err
	}
	str := func(k string) string { s, _ := fields[k].(object.Str); return string(s) }
	us := func(k string) int64 { n, _ := fields[k].(object.Int); return int64(n) }
	w.totalExec = micros(uint64(max(us("total_us"), 0)))
	w.feedExec = micros(uint64(max(us("feed_us"), 0)))
	w.checkCtx.Code = str("checked")
	w.pendingCode = str("pending")
	w.cwd = str("cwd")
	w.stubs = dictStrings(fields["stubs"])
	w.asked = map[string]bool{}
	for m := range dictStrings(fields["asked"]) {
		w.asked[m] = true
	}
	return nil
}

// stringDict is m as a dict sorted by key, for a dump's header.
func stringDict(m map[string]string) object.Dict {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d := make(object.Dict, len(keys))
	for i, k := range keys {
		d[i] = object.Pair{Key: object.Str(k), Value: object.Str(m[k])}
	}
	return d
}

func boolsToStrings(m map[string]bool) map[string]string {
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = ""
	}
	return out
}

// dictStrings reads a dict of str to str from a dump's header.
func dictStrings(v object.Value) map[string]string {
	d, _ := v.(object.Dict)
	out := make(map[string]string, len(d))
	for _, p := range d {
		k, ok1 := p.Key.(object.Str)
		s, ok2 := p.Value.(object.Str)
		if ok1 && ok2 {
			out[string(k)] = string(s)
		}
	}
	return out
}
