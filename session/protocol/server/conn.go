package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
	"github.com/monty-go/monty/session/tools"
)

// conn is one connection: one session, served by its own worker.
type conn struct {
	s    *Server
	ns   string
	ws   *websocket.Conn
	base context.Context
	w    *protocol.Worker

	writeMu sync.Mutex

	sid string // the stored session's id; "" when not stored
	// legacy is the store id sid was loaded from in the legacy format,
	// removed once the session is parked in the new one ("" if none).
	legacy string
	// lease is the keeper's claim on session sid, held while the
	// connection holds the session (nil: none). It keeps the session as
	// last loaded or stored (Lease.Driven; nil: not yet, and its first
	// store stores it only if its id is free).
	lease     *session.Lease
	announce  bool // the next turn-ending event carries sid
	ephemeral bool
	// dirty: the worker's session may differ from what is stored under
	// sid (set by every turn, cleared by every store of it).
	dirty bool
	// unstored: a turn's state could not be stored, and the connection
	// ends without storing anything more (the store keeps the session as
	// of the last turn answered).
	unstored bool

	mounts *vfs.MountTable // the profile's mounts, opened for this session
	tools  *tools.Registry // the profile's, for the calls that wait for approval

	cancelMu sync.Mutex
	cancel   context.CancelFunc
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
	c.w = protocol.NewWorker(protocol.WorkerOptions{Interpreters: s.pool, Checker: s.opts.Checker, Logger: s.log,
		Approve: c.approve, Restored: c.restored})
	closeCode, reason := websocket.StatusNormalClosure, ""
	broken := false
	defer func() {
		if !broken && !c.unstored {
			c.park(context.WithoutCancel(ctx), "disconnect")
		}
		c.release()
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
		lost := c.closeWhenLost()
		typ, b, err := c.ws.Read(rctx)
		idle := err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded)
		rcancel()
		switch {
		case lost() && ctx.Err() == nil:
			s.log.Warn("monty.v1 session's claim in the store was lost; closing the connection", "session_id", c.sid, "error", c.lease.Err())
			closeCode, reason = websocket.StatusTryAgainLater, errClaimLost.Error()
			return
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
			switch {
			case errors.Is(err, errTurnTimeout):
				closeCode, reason = websocket.StatusPolicyViolation, "turn timeout"
			case errors.Is(err, errNotStored):
				closeCode, reason = websocket.StatusInternalError, "session not stored"
			}
			return
		}
		if !more {
			return
		}
	}
}

var (
	errTurnTimeout = errors.New("turn timeout")
	errNotStored   = errors.New("session not stored")
)

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
				// Stored from its first turn on: until then it holds
				// nothing to lose.
				c.newSession()
				c.announce = true
			}
			return send(ev)
		})
		return outcome == protocol.Continue, err
	case *pb.ParentRequest_Load:
		sctx, span := c.span(ctx, "load")
		ev := c.load(sctx, k.Load.GetState())
		endSpan(span, ev)
		if ev.GetOk() == nil && ev.GetError() == nil && ev.GetFatalError() == nil {
			// A feed loaded suspended was announced again, or went on
			// (an approval decided meanwhile): store where it is now.
			c.dirty = true
			if err := c.commit(ctx, send); err != nil {
				return false, err
			}
		}
		return true, send(ev)
	case *pb.ParentRequest_Dump:
		sctx, span := c.span(ctx, "dump")
		ev := c.dump(sctx)
		endSpan(span, ev)
		return true, send(ev)
	case *pb.ParentRequest_Reset_:
		c.park(ctx, "reset")
		c.drop()
		c.announce, c.ephemeral = false, false
		outcome, err := c.w.Handle(ctx, req, send)
		return outcome == protocol.Continue, err
	case *pb.ParentRequest_Shutdown:
		c.park(ctx, "shutdown")
		c.drop() // parked: nothing more to store when the connection ends
		_, err := c.w.Handle(ctx, req, send)
		return false, err
	}
	// Feeds, answers to suspensions and the rest run the interpreter.
	resumed := req.GetFeed() == nil
	tctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	defer cancel()
	tctx, unbind := c.bind(tctx)
	defer unbind()
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
			c.dirty = true
			if err := c.commit(ctx, send); err != nil {
				return err
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
	c.tools = p.Tools
	var host runtime.Host
	if p.Host != nil {
		host = *p.Host
	}
	if len(p.Mounts) > 0 {
		t, err := vfs.OpenMounts(p.Mounts...)
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

// newSession gives the connection's session a new id, and claims it.
func (c *conn) newSession() {
	c.sid, c.legacy, c.dirty = newID("s-"), "", true
	_ = c.claim(context.Background(), c.sid, 0) // a new id is nobody else's
}

// claim claims session id of the connection's namespace in the keeper,
// in place of the session it held, waiting up to wait for its holder.
func (c *conn) claim(ctx context.Context, id string, wait time.Duration) error {
	c.release()
	if c.s.keeper == nil {
		return nil // nothing is stored
	}
	lease, err := c.s.keeper.Claim(ctx, c.s.sessionPlace(c.ns, id).storeID, session.ClaimOptions{Who: "a monty.v1 connection", Wait: wait, Long: true})
	c.lease = lease
	return err
}

// release ends the connection's claim on its session, once parked.
func (c *conn) release() {
	if c.lease != nil {
		c.lease.Release()
		c.lease = nil
	}
}

// keep gives the connection's claim its session as loaded or stored
// (Lease.Keep); without a claim (no store) there is nothing to keep.
func (c *conn) keep(d *session.Driven) {
	if c.lease != nil {
		c.lease.Keep(d)
	}
}

// drop forgets the connection's session (parked, or not to be stored).
func (c *conn) drop() {
	c.release()
	c.sid, c.legacy = "", ""
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
	record := isRecordID(id)
	if !record && !apikey.ValidSessionID(id) {
		return protocol.Violation("failed to load session: this server loads sessions by id (a session_id, or the id dump() returned), not dump bytes")
	}
	// A failed load leaves the session checkout configured as it was.
	prevSID, prevHeld := c.sid, c.lease.Driven()
	restore := func() {
		c.drop()
		if prevSID != "" {
			_ = c.claim(context.WithoutCancel(ctx), prevSID, 0)
			c.sid = prevSID
			c.keep(prevHeld)
		}
	}
	at := s.sessionPlace(c.ns, id)
	if record {
		at = s.recordPlace(c.ns, id)
	} else if err := c.claim(ctx, id, session.LongHoldWait); err != nil {
		// A client that closed one connection and loads its session on
		// the next can be quicker than the server parking it: the claim
		// waits a moment for the old connection to release it.
		restore()
		var be *session.BusyError
		holder := "another caller"
		if errors.As(err, &be) {
			holder = be.Holder
		}
		return errEvent("RuntimeError", fmt.Sprintf("session %s is busy: held by %s; retry when it is free", id, holder))
	}
	ev, held, legacy := c.loadStored(ctx, id, at, record)
	if ev.GetError() != nil || ev.GetFatalError() != nil {
		restore()
		return ev
	}
	cfg := c.w.Config()
	if _, ok := s.opts.Profiles[cfg.GetProfile()]; !ok && cfg.GetProfile() != "" {
		c.w.Reset()
		restore()
		return errEvent("ValueError", fmt.Sprintf("the session ran under profile %q, which this server does not have (it has %s)", cfg.GetProfile(), s.profileList()))
	}
	if err := c.useProfile(cfg); err != nil {
		c.w.Reset()
		restore()
		return errEvent("RuntimeError", err.Error())
	}
	c.ephemeral = cfg.GetPersistence() == pb.Persistence_PERSISTENCE_EPHEMERAL
	switch {
	case c.ephemeral:
		c.drop()
	case record:
		c.newSession() // a record starts a new session
	default:
		c.sid, c.legacy, c.dirty = id, legacy, legacy != "" // continuing that session
		c.keep(held)
	}
	if c.sid != "" {
		ev.SessionId = []byte(c.sid)
	}
	return ev
}

// loadStored loads what is stored at at into the worker and returns the
// event answering the load, with the stored session (nil when it was in
// the legacy format, whose old store id is returned).
func (c *conn) loadStored(ctx context.Context, id string, at place, record bool) (*pb.ChildEvent, *session.Driven, string) {
	s := c.s
	if record {
		// Records stay where earlier releases wrote them (legacy.go).
		obj, err := s.store.Get(ctx, at.storeID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return notStored(id), nil, ""
		case err == nil && isLegacy(obj.Data):
			return c.loadLegacy(ctx, id, at.storeID, obj.Data), nil, ""
		}
	}
	held, err := session.OpenDriven(ctx, at.storeID, at.opts)
	if err == nil && !held.Found() {
		if record {
			return notStored(id), nil, "" // removed meanwhile
		}
		// Parked by an earlier release, in the record space?
		legacy := s.recordPlace(c.ns, id).storeID
		obj, err := s.store.Get(ctx, legacy)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return notStored(id), nil, ""
		case err != nil:
			return c.storedError(ctx, id, err), nil, ""
		}
		return c.loadLegacy(ctx, id, legacy, obj.Data), nil, legacy
	}
	if err != nil {
		return c.storedError(ctx, id, err), nil, ""
	}
	dump, err := held.Dump()
	if err != nil {
		return c.storedError(ctx, id, err), nil, ""
	}
	var header []byte
	if drv := held.Driver(); drv != nil && drv.Name == driverName {
		header = drv.State
	}
	if !record {
		// Already this connection's session while the load goes on: a
		// feed loaded waiting for an approval waits for it again.
		c.sid = id
		c.keep(held)
	}
	ev := c.w.LoadLive(ctx, header, dump)
	if live, err := c.w.Live(ctx); err == nil && ev.GetError() == nil {
		held.Bind(live.REPL)
	}
	return ev, held, ""
}

func notStored(id string) *pb.ChildEvent {
	return protocol.Violation("failed to load session: no session or record %s is stored for this API key", id)
}

// loadLegacy loads data, a session or record stored by an earlier release
// at storeID.
func (c *conn) loadLegacy(ctx context.Context, id, storeID string, data []byte) *pb.ChildEvent {
	s := c.s
	payload, err := s.openLegacy(storeID, data)
	if err != nil {
		qid, kerr := session.KeepAside(ctx, s.store, storeID, data)
		return c.storedError(ctx, id, &session.CorruptStateError{ID: storeID, QuarantinedAs: qid,
			Err: fmt.Errorf("%w: %w", session.ErrCorrupt, err), KeepErr: kerr})
	}
	var ev *pb.ChildEvent
	_, _ = c.w.Handle(ctx, &pb.ParentRequest{Kind: &pb.ParentRequest_Load{Load: &pb.Load{State: payload}}}, func(e *pb.ChildEvent) error {
		if e.GetPrint() == nil {
			ev = e
		}
		return nil
	})
	if ev == nil {
		ev = errEvent("RuntimeError", "loading the session failed")
	}
	return ev
}

// storedError is the answer to a load of id (a session's or a record's)
// whose stored state could not be read or used.
func (c *conn) storedError(ctx context.Context, id string, err error) *pb.ChildEvent {
	log := c.s.log.With("id", id, "error", err)
	what, advice := "session", fmt.Sprintf("delete the session to use its id again (DELETE /state/%s on the HTTP API), or start a new one", id)
	if isRecordID(id) {
		what, advice = "record", "load another record or session, or start a new one"
	}
	var corrupt *session.CorruptStateError
	switch {
	case errors.As(err, &corrupt) && corrupt.KeepErr == nil:
		log.WarnContext(ctx, "monty.v1 stored session is corrupt; kept aside", "quarantined_as", corrupt.QuarantinedAs)
		return errEvent("RuntimeError", fmt.Sprintf("%s %s is corrupt and was not loaded (%s); a copy was kept aside as %q and the original left in place: %s",
			what, id, session.CorruptReason(corrupt.Err), clientID(corrupt.QuarantinedAs), advice))
	case errors.As(err, &corrupt):
		log.ErrorContext(ctx, "monty.v1 stored session is corrupt, and keeping it aside failed", "keep_error", corrupt.KeepErr)
		return errEvent("RuntimeError", fmt.Sprintf("%s %s is corrupt and was not loaded (%s), and could not be kept aside, so it was left in place: %s",
			what, id, session.CorruptReason(corrupt.Err), advice))
	case errors.Is(err, session.ErrRunPaused), errors.Is(err, session.ErrRunUnloadable), errors.Is(err, session.ErrNewerFormat):
		log.InfoContext(ctx, "monty.v1 stored session cannot be loaded here")
		return errEvent("RuntimeError", fmt.Sprintf("%s %s cannot be loaded here: %s", what, id, strings.TrimPrefix(err.Error(), "session: ")))
	case errors.Is(err, runtime.ErrMemoryLimit):
		return errEvent("MemoryError", fmt.Sprintf("%s %s does not fit this server's memory limit: %v", what, id, err))
	}
	log.WarnContext(ctx, "monty.v1 load failed")
	return errEvent("RuntimeError", "the session store could not be read; retry shortly")
}

// clientID is a stored id without its namespace, as a client names it.
func clientID(storeID string) string {
	if _, id, ok := strings.Cut(storeID, "/"); ok {
		return id
	}
	return storeID
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
	id := newID("r-")
	at := s.recordPlace(c.ns, id)
	if _, err := c.saveInto(ctx, at, nil); err != nil {
		s.log.Warn("monty.v1 dump not stored", "error", err)
		if errors.Is(err, session.ErrStateTooLarge) {
			return errEvent("RuntimeError", "dump failed: the session is larger than this server's limit on stored state")
		}
		return errEvent("RuntimeError", "dump failed: "+dumpFailure(err))
	}
	return &pb.ChildEvent{Kind: &pb.ChildEvent_DumpResult{DumpResult: &pb.DumpResult{State: []byte(id)}}}
}

// dumpFailure is why a dump failed, for the client.
func dumpFailure(err error) string {
	var se *saveError
	if errors.As(err, &se) {
		return se.err.Error()
	}
	return "the session store could not be written; retry shortly"
}

// saveError is a failure of the worker's session, not of the store.
type saveError struct{ err error }

func (e *saveError) Error() string { return e.err.Error() }
func (e *saveError) Unwrap() error { return e.err }

// saveInto stores the worker's session at at: into held (nil: a new
// entry, stored only if at's id is free). It returns the Driven now
// holding it.
func (c *conn) saveInto(ctx context.Context, at place, held *session.Driven) (*session.Driven, error) {
	live, err := c.w.Live(ctx)
	if err != nil {
		return nil, &saveError{err}
	}
	if held == nil {
		if held, err = session.NewDriven(ctx, at.storeID, at.opts); err != nil {
			return nil, err
		}
	}
	r := session.DrivenREPL{Interpreter: live.Interpreter, REPL: live.REPL, Feed: live.Feed, Limits: live.Limits, Stable: live.Stable}
	return held, held.Save(ctx, r, session.Driver{Name: driverName, State: live.Header})
}

// durable reports whether the connection's session is stored after each
// turn, before the turn is answered (Options.ParkOnly, Profile.ParkOnly).
func (c *conn) durable() bool {
	if c.sid == "" || c.s.store == nil || c.s.opts.ParkOnly {
		return false
	}
	return !c.s.opts.Profiles[c.w.Config().GetProfile()].ParkOnly
}

// errClaimLost is the reason of a connection closed because its claim on
// its session was lost.
var errClaimLost = errors.New("session claimed elsewhere")

// closeWhenLost closes the connection (1013, errClaimLost) if its claim on
// its session is lost while it waits for the client's next request, and
// returns the function that stops watching and reports whether it did.
func (c *conn) closeWhenLost() func() bool {
	if c.lease == nil {
		return func() bool { return false }
	}
	stop := c.lease.AfterLost(func() { _ = c.ws.Close(websocket.StatusTryAgainLater, errClaimLost.Error()) })
	return func() bool { return !stop() }
}

// bind returns ctx, ended with session.ErrLeaseLost as its cause when the
// connection's claim on its session is lost.
func (c *conn) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.lease == nil {
		return ctx, func() {}
	}
	return c.lease.Bind(ctx)
}

// commit stores the session as the turn left it, before the turn's
// answer goes out, when the session is durable: what a client was
// answered is in the store. When it cannot be stored, the client is told
// so instead (through send), and the error ends the connection: the store
// keeps the session as of the turn answered last.
func (c *conn) commit(ctx context.Context, send func(*pb.ChildEvent) error) error {
	if !c.durable() {
		return nil
	}
	s := c.s
	ctx, span := c.span(context.WithoutCancel(ctx), "commit")
	defer span.End()
	err := c.lease.Err() // nil for a nil lease
	if err == nil {
		err = c.store(ctx)
	}
	if err == nil {
		return nil
	}
	telemetry.Fail(span, err)
	c.unstored = true
	s.log.Warn("monty.v1 turn not stored; closing the connection", "session_id", c.sid, "error", err)
	_ = send(errEvent("RuntimeError", c.notStored(err)))
	return errNotStored
}

// notStored tells the client that the turn's state could not be stored
// (err), and what it does now.
func (c *conn) notStored(err error) string {
	why := "the session could not be stored (" + dumpFailure(err) + ")"
	switch {
	case errors.Is(err, session.ErrStateTooLarge):
		why = "the session is larger than this server's limit on stored state"
	case errors.Is(err, store.ErrConflict), errors.Is(err, session.ErrLeaseLost):
		why = "the session was taken over by another connection or instance (its claim lapsed while the store was out of reach)"
	}
	next := fmt.Sprintf("load_session('%s') on a new connection continues it as stored, as of the last turn answered", c.sid)
	if c.lease.Driven() == nil {
		next = "it was never stored: start a new one"
	}
	return why + ", so this turn's changes were not kept and the connection closes; " + next
}

// store stores the session under its id, in place of what the connection
// last loaded or stored (store.ErrConflict when another writer stored it
// since), and removes its legacy entry once it is stored in the format.
func (c *conn) store(ctx context.Context) error {
	s := c.s
	held, err := c.saveInto(ctx, s.sessionPlace(c.ns, c.sid), c.lease.Driven())
	if err != nil {
		return err
	}
	c.keep(held)
	c.dirty = false
	if c.legacy != "" {
		// Stored in the new format: the legacy entry is not the session
		// any more.
		if err := s.store.Delete(ctx, c.legacy); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("monty.v1 legacy session entry not removed", "session_id", c.sid, "store_id", c.legacy, "error", err)
		}
		c.legacy = ""
	}
	return nil
}

// park stores the session under its id, unless the store holds it as it
// is, so that Load continues it on any instance (and /exec on the HTTP
// API). A session written meanwhile by another connection or surface is
// not overwritten: this one is kept under a new id.
func (c *conn) park(ctx context.Context, why string) {
	s := c.s
	if c.sid == "" || s.store == nil || !c.w.Configured() || !c.dirty {
		return
	}
	ctx, span := c.span(ctx, "park")
	defer span.End()
	span.SetAttributes(attribute.String("monty.session.park_reason", why))
	for range 2 {
		err := c.store(ctx)
		if errors.Is(err, store.ErrConflict) {
			old := c.sid
			c.newSession()
			s.log.Warn("monty.v1 session was continued elsewhere meanwhile; parking this one under a new id", "session_id", old, "new_session_id", c.sid)
			continue
		}
		if err != nil {
			telemetry.Fail(span, err)
			s.log.Warn("monty.v1 session not parked", "session_id", c.sid, "why", why, "error", err)
			return
		}
		s.log.Debug("monty.v1 session parked", "session_id", c.sid, "why", why)
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
	c.drop() // parked; nothing more to do at the close
}
