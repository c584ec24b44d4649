package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
)

// conn is one connection: one session, served by its own worker.
type conn struct {
	s    *Server
	ns   string
	ws   *websocket.Conn
	base context.Context
	w    *protocol.Worker

	writeMu sync.Mutex

	sid       string // the stored session's id; "" when not stored
	version   string // the store version sid was last read or written at
	announce  bool   // the next turn-ending event carries sid
	ephemeral bool

	mounts *runtime.MountTable // the profile's mounts, opened for this session

	cancelMu sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{} // closed once the connection ended and parked its session
}

// abandon ends the connection from outside (Shutdown's deadline).
func (c *conn) abandon() {
	c.cancelMu.Lock()
	defer c.cancelMu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *conn) send(ctx context.Context, ev *pb.ChildEvent) error {
	if ev.GetPrint() == nil && c.announce && c.sid != "" {
		ev.SessionId = []byte(c.sid)
		c.announce = false
	}
	b, err := proto.Marshal(ev)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.ws.Write(ctx, websocket.MessageBinary, b)
}

func (c *conn) serve() {
	s := c.s
	ctx, cancel := context.WithCancel(c.base)
	c.cancelMu.Lock()
	c.cancel = cancel
	c.cancelMu.Unlock()
	defer cancel()
	c.w = protocol.NewWorker(protocol.WorkerOptions{Interpreters: s.pool, Checker: s.opts.Checker, Logger: s.log})
	closeCode, reason := websocket.StatusNormalClosure, ""
	broken := false
	defer func() {
		if !broken {
			c.park(context.WithoutCancel(ctx), "disconnect")
		}
		close(c.done)
		c.w.Close(context.WithoutCancel(ctx))
		c.closeMounts()
		_ = c.ws.Close(closeCode, reason)
	}()
	defer func() {
		// A bug of ours ends this connection, never the server.
		if r := recover(); r != nil {
			broken = true // the session's state is unknown: not parked
			s.log.Error("monty.v1 connection failed", "panic", r)
			_ = c.send(ctx, protocol.FatalEvent("internal error: %v", r))
			closeCode, reason = websocket.StatusInternalError, "internal error"
		}
	}()
	for {
		rctx, rcancel := context.WithTimeout(ctx, s.opts.IdleTimeout)
		typ, b, err := c.ws.Read(rctx)
		idle := err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded)
		rcancel()
		switch {
		case idle && ctx.Err() == nil:
			s.log.Info("monty.v1 connection idle; closing it", "session_id", c.sid, "idle_timeout", s.opts.IdleTimeout)
			closeCode, reason = websocket.StatusPolicyViolation, "idle timeout"
			return
		case err != nil:
			var tooBig *frameTooBigError
			switch {
			case errors.As(err, &tooBig):
				s.log.Warn("monty.v1 request frame over the cap; closing the connection", "session_id", c.sid, "announced", tooBig.announced, "max_frame", tooBig.limit)
				closeCode, reason = websocket.StatusMessageTooBig, fmt.Sprintf("frame of %d bytes over the cap of %d", tooBig.announced, tooBig.limit)
			case errors.Is(err, errFrameStalled):
				s.log.Warn("monty.v1 request frame stopped arriving; closing the connection", "session_id", c.sid, "frame_timeout", s.opts.FrameTimeout)
				closeCode, reason = websocket.StatusPolicyViolation, "frame stalled"
			default:
				if websocket.CloseStatus(err) == -1 && ctx.Err() == nil {
					s.log.Debug("monty.v1 connection ended", "error", err)
				}
				closeCode, reason = websocket.StatusGoingAway, ""
			}
			return
		case typ != websocket.MessageBinary:
			_ = c.send(ctx, protocol.FatalEvent("malformed request frame: a text message; monty.v1 frames are binary messages"))
			closeCode, reason = websocket.StatusUnsupportedData, "binary messages only"
			return
		}
		req := &pb.ParentRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			if err := c.send(ctx, protocol.Violation("malformed request: failed to decode Protobuf message: %v", err)); err != nil {
				return
			}
			continue
		}
		select {
		case <-s.drain:
			c.shutdownDump(ctx)
			closeCode, reason = websocket.StatusGoingAway, "server shutting down"
			return
		default:
		}
		more, err := c.handle(ctx, req)
		if err != nil {
			if errors.Is(err, errTurnTimeout) {
				closeCode, reason = websocket.StatusPolicyViolation, "turn timeout"
			}
			return
		}
		if !more {
			return
		}
	}
}

var errTurnTimeout = errors.New("turn timeout")

// handle serves one request; false ends the connection.
func (c *conn) handle(ctx context.Context, req *pb.ParentRequest) (bool, error) {
	s := c.s
	if tp := req.GetTraceParent(); tp != "" {
		ctx = s.tel.Propagator().Extract(ctx, propagation.MapCarrier{"traceparent": tp})
	}
	send := func(ev *pb.ChildEvent) error { return c.send(ctx, ev) }
	switch k := req.Kind.(type) {
	case *pb.ParentRequest_Configure:
		if ev := c.configure(k.Configure); ev != nil {
			return true, send(ev)
		}
		fresh := !c.w.Configured()
		outcome, err := c.w.Handle(ctx, req, func(ev *pb.ChildEvent) error {
			if fresh && ev.GetOk() != nil && !c.ephemeral && s.store != nil {
				c.sid, c.version, c.announce = newID("s-"), "", true
				s.hold(storeKey(c.ns, c.sid), c)
			}
			return send(ev)
		})
		return outcome == protocol.Continue, err
	case *pb.ParentRequest_Load:
		sctx, span := c.span(ctx, "load")
		ev := c.load(sctx, k.Load.GetState())
		endSpan(span, ev)
		return true, send(ev)
	case *pb.ParentRequest_Dump:
		sctx, span := c.span(ctx, "dump")
		ev := c.dump(sctx)
		endSpan(span, ev)
		return true, send(ev)
	case *pb.ParentRequest_Reset_:
		c.park(ctx, "reset")
		c.sid, c.version, c.announce, c.ephemeral = "", "", false, false
		outcome, err := c.w.Handle(ctx, req, send)
		return outcome == protocol.Continue, err
	case *pb.ParentRequest_Shutdown:
		c.park(ctx, "shutdown")
		c.sid = "" // parked: nothing more to store when the connection ends
		_, err := c.w.Handle(ctx, req, send)
		return false, err
	}
	// Feeds, answers to suspensions and the rest run the interpreter.
	resumed := req.GetFeed() == nil
	tctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	defer cancel()
	tctx, span := s.tel.StartExecution(tctx, c.sid, resumed)
	var last *pb.ChildEvent
	timedOut := func() bool { return errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil }
	outcome, err := c.w.Handle(tctx, req, func(ev *pb.ChildEvent) error {
		if ev.GetPrint() == nil {
			last = ev
			if timedOut() {
				// A turn timeout is a dropped connection, as monty-server's.
				return errTurnTimeout
			}
		}
		return send(ev)
	})
	span.End(outcomeOf(last, err))
	if timedOut() {
		s.log.Warn("monty.v1 request ran past the turn timeout; closing the connection", "session_id", c.sid, "turn_timeout", s.opts.TurnTimeout)
		return false, errTurnTimeout
	}
	return outcome == protocol.Continue, err
}

// span starts the span of a stored-session operation (load, dump, park),
// a root span unless ctx carries a trace.
func (c *conn) span(ctx context.Context, op string) (context.Context, trace.Span) {
	ctx, span := c.s.tel.Tracer().Start(ctx, telemetry.SpanSessionPrefix+op, trace.WithSpanKind(trace.SpanKindInternal))
	if c.sid != "" {
		span.SetAttributes(telemetry.AttrSessionID.String(c.sid))
	}
	return ctx, span
}

// endSpan ends a span with the outcome of the event answering its request.
func endSpan(span trace.Span, ev *pb.ChildEvent) {
	if e := ev.GetError(); e != nil {
		telemetry.Fail(span, errors.New(e.GetException().GetMessage()))
	}
	span.End()
}

// outcomeOf describes the turn-ending event for the execution span.
func outcomeOf(ev *pb.ChildEvent, err error) telemetry.Outcome {
	switch {
	case err != nil:
		return telemetry.Outcome{Kind: telemetry.OutcomeError, Err: err}
	case ev.GetComplete() != nil:
		return telemetry.Outcome{Kind: telemetry.OutcomeOK}
	case ev.GetError() != nil:
		return telemetry.Outcome{Kind: telemetry.OutcomeException, ExceptionType: ev.GetError().GetException().GetExcType()}
	case ev.GetTypingError() != nil:
		return telemetry.Outcome{Kind: telemetry.OutcomeTypeError, Err: errors.New("type errors")}
	case ev.GetFatalError() != nil:
		return telemetry.Outcome{Kind: telemetry.OutcomeError, Err: errors.New(ev.GetFatalError().GetMessage())}
	}
	return telemetry.Outcome{Kind: telemetry.OutcomePaused}
}

// configure checks the session's profile and applies it; a non-nil event
// refuses the request.
func (c *conn) configure(cfg *pb.Configure) *pb.ChildEvent {
	if c.w.Configured() {
		return nil // the worker refuses it
	}
	if _, ok := c.s.opts.Profiles[cfg.GetProfile()]; !ok && cfg.GetProfile() != "" {
		return errEvent("ValueError", fmt.Sprintf("unknown profile %q: this server has %s", cfg.GetProfile(), c.s.profileList()))
	}
	if err := c.useProfile(cfg); err != nil {
		return errEvent("RuntimeError", err.Error())
	}
	c.ephemeral = cfg.GetPersistence() == pb.Persistence_PERSISTENCE_EPHEMERAL
	return nil
}

// useProfile applies the profile cfg names: its ceilings on cfg's limits,
// and its mounts and host functions for the worker.
func (c *conn) useProfile(cfg *pb.Configure) error {
	p := c.s.opts.Profiles[cfg.GetProfile()]
	c.s.applyProfile(cfg)
	c.closeMounts()
	var host runtime.Host
	if p.Host != nil {
		host = *p.Host
	}
	if len(p.Mounts) > 0 {
		t, err := runtime.OpenMounts(p.Mounts...)
		if err != nil {
			c.s.log.Error("monty.v1 profile mounts cannot be opened", "profile", cfg.GetProfile(), "error", err)
			return fmt.Errorf("the server's mounts for this profile cannot be opened; the server's log has the detail")
		}
		c.mounts = t
		if host.OS != nil {
			host.OS = runtime.Chain{t, host.OS}
		} else {
			host.OS = t
		}
	}
	if p.Host == nil && c.mounts == nil {
		c.w.SetHost(nil)
	} else {
		c.w.SetHost(&host)
	}
	return nil
}

func (c *conn) closeMounts() {
	if c.mounts != nil {
		_ = c.mounts.Close()
		c.mounts = nil
	}
}

// profileList names the server's profiles, for messages.
func (s *Server) profileList() string {
	var names []string
	for n := range s.opts.Profiles {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no named profiles"
	}
	return fmt.Sprintf("the profiles %q", names)
}

// applyProfile lowers the limits of cfg to its profile's ceilings.
func (s *Server) applyProfile(cfg *pb.Configure) {
	p := s.opts.Profiles[cfg.GetProfile()]
	if cfg.Limits == nil {
		cfg.Limits = &pb.ResourceLimits{}
	}
	l := cfg.Limits
	ceil := func(field **uint64, max uint64) {
		if max > 0 && (*field == nil || **field > max) {
			*field = &max
		}
	}
	if p.Limits.MaxMemory > 0 {
		ceil(&l.MaxMemoryBytes, uint64(p.Limits.MaxMemory))
	}
	if p.Limits.MaxRecursion > 0 {
		ceil(&l.MaxRecursionDepth, uint64(p.Limits.MaxRecursion))
	}
	if p.Limits.MaxDuration > 0 {
		ceil(&l.MaxFeedDurationMicros, uint64(p.Limits.MaxDuration.Microseconds()))
	}
}

func errEvent(excType, msg string) *pb.ChildEvent {
	return &pb.ChildEvent{Kind: &pb.ChildEvent_Error{Error: &pb.Error{Exception: &pb.RaisedException{ExcType: excType, Message: &msg}}}}
}

// load starts the session from a stored session or record, by id.
func (c *conn) load(ctx context.Context, state []byte) *pb.ChildEvent {
	s := c.s
	if c.w.Started() {
		return protocol.Violation("Load while a session already exists")
	}
	if s.store == nil {
		return errEvent("RuntimeError", "this server stores no sessions (started without --store), so there is nothing to load by id")
	}
	id := string(state)
	if !validID(id) {
		return protocol.Violation("failed to load session: this server loads sessions by id (a session_id, or the id dump() returned), not dump bytes")
	}
	key := storeKey(c.ns, id)
	if id[:2] == "s-" { // a session; records are never held by a connection
		if prev := s.hold(key, c); prev != nil {
			// A client that closed one connection and loads its session on
			// the next can be quicker than the server parking it: wait a
			// moment for the old connection to end.
			select {
			case <-prev.done:
			case <-time.After(holderWait):
			case <-ctx.Done():
			}
		}
	}
	obj, err := s.store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.Violation("failed to load session: no session or record %s is stored for this API key", id)
	case err != nil:
		s.log.Warn("monty.v1 load failed", "id", id, "error", err)
		return errEvent("RuntimeError", "the session store could not be read; retry shortly")
	}
	payload, err := s.open(key, obj.Data)
	if err != nil {
		s.log.Warn("monty.v1 stored session refused", "id", id, "error", err)
		return protocol.Violation("failed to load session %s: %v", id, err)
	}
	var ev *pb.ChildEvent
	_, herr := c.w.Handle(ctx, &pb.ParentRequest{Kind: &pb.ParentRequest_Load{Load: &pb.Load{State: payload}}}, func(e *pb.ChildEvent) error {
		if e.GetPrint() == nil {
			ev = e
		}
		return nil
	})
	if herr != nil || ev == nil {
		return errEvent("RuntimeError", "loading the session failed")
	}
	if ev.GetError() != nil || ev.GetFatalError() != nil {
		return ev
	}
	cfg := c.w.Config()
	if _, ok := s.opts.Profiles[cfg.GetProfile()]; !ok && cfg.GetProfile() != "" {
		c.w.Reset()
		return errEvent("ValueError", fmt.Sprintf("the session ran under profile %q, which this server does not have (it has %s)", cfg.GetProfile(), s.profileList()))
	}
	if err := c.useProfile(cfg); err != nil {
		c.w.Reset()
		return errEvent("RuntimeError", err.Error())
	}
	c.ephemeral = cfg.GetPersistence() == pb.Persistence_PERSISTENCE_EPHEMERAL
	switch {
	case c.ephemeral:
		c.sid, c.version = "", ""
	case id[:2] == "s-":
		c.sid, c.version = id, obj.Info.Version // continuing that session
	default:
		c.sid, c.version = newID("s-"), ""
		s.hold(storeKey(c.ns, c.sid), c)
	}
	if c.sid != "" {
		ev.SessionId = []byte(c.sid)
	}
	return ev
}

// dump writes the session to a new record and answers with its id.
func (c *conn) dump(ctx context.Context) *pb.ChildEvent {
	s := c.s
	if !c.w.Configured() {
		return protocol.Violation("Dump without a session")
	}
	if s.store == nil {
		return errEvent("RuntimeError", "this server stores no sessions (started without --store), so dump() has nowhere to write")
	}
	snap, err := c.w.Snapshot(ctx)
	if err != nil {
		return errEvent("RuntimeError", "dump failed: "+err.Error())
	}
	id := newID("r-")
	key := storeKey(c.ns, id)
	if _, err := s.store.Put(ctx, key, s.seal(key, snap), store.Cond{IfAbsent: true}); err != nil {
		s.log.Warn("monty.v1 dump not stored", "error", err)
		return errEvent("RuntimeError", "the session store could not be written; retry shortly")
	}
	return &pb.ChildEvent{Kind: &pb.ChildEvent_DumpResult{DumpResult: &pb.DumpResult{State: []byte(id)}}}
}

// park stores the session under its id, so that Load continues it on any
// instance. A session written meanwhile by another connection is not
// overwritten: this one is kept under a new id.
func (c *conn) park(ctx context.Context, why string) {
	s := c.s
	if c.sid == "" || s.store == nil || !c.w.Configured() {
		return
	}
	ctx, span := c.span(ctx, "park")
	defer span.End()
	span.SetAttributes(attribute.String("monty.session.park_reason", why))
	snap, err := c.w.Snapshot(ctx)
	if err != nil {
		telemetry.Fail(span, err)
		s.log.Warn("monty.v1 session not parked", "session_id", c.sid, "why", why, "error", err)
		return
	}
	for range 2 {
		key := storeKey(c.ns, c.sid)
		cond := store.Cond{IfAbsent: c.version == "", IfVersion: c.version}
		info, err := s.store.Put(ctx, key, s.seal(key, snap), cond)
		if errors.Is(err, store.ErrConflict) {
			old := c.sid
			c.sid, c.version = newID("s-"), ""
			s.hold(storeKey(c.ns, c.sid), c)
			s.log.Warn("monty.v1 session was continued elsewhere meanwhile; parking this one under a new id", "session_id", old, "new_session_id", c.sid)
			continue
		}
		if err != nil {
			telemetry.Fail(span, err)
			s.log.Warn("monty.v1 session not parked", "session_id", c.sid, "why", why, "error", err)
			return
		}
		c.version = info.Version
		s.log.Debug("monty.v1 session parked", "session_id", c.sid, "why", why, "bytes", len(snap))
		return
	}
}

// shutdownDump answers a request the draining server does not run.
func (c *conn) shutdownDump(ctx context.Context) {
	c.park(ctx, "drain")
	sd := &pb.ShutdownDump{}
	if c.sid != "" {
		sd.Dump = []byte(c.sid)
	}
	c.announce = false
	_ = c.send(ctx, &pb.ChildEvent{Kind: &pb.ChildEvent_Shutdown{Shutdown: sd}})
	c.sid = "" // parked; nothing more to do at the close
}
