package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// The monty.v1 workload: each session is one client's, over WebSocket, as
// pydantic-monty's AsyncMontyWebsocket drives it. Every feed appends a
// value to the session's list and returns the list; every fourth gets the
// value from the client's function ask(). When a connection breaks (its
// instance killed, or the server closing it because a turn could not be
// stored), the client does what docs/protocol.md says a caller does after
// MontyDisconnectError: it connects to the other instance and loads the
// session by id (waiting while the dead holder's claim lapses); a feed
// loaded suspended on ask() is answered; otherwise the list tells whether
// the feed in doubt was applied, and the feed is sent again only if not.
// The final read goes through the HTTP API (the sessions are the API
// key's), and the checker's rules are those of /exec's appends: every
// acknowledged feed's value present exactly once, none applied twice. On
// top, ask() is never asked again for a feed once its result was
// acknowledged (acknowledged means stored).

// v1Session is one client's monty.v1 session.
type v1Session struct {
	r    *scenarioRun
	h    *SessionHistory
	sid  string
	ws   *websocket.Conn
	inst int
	// asked counts the asks of ask() per value; stored marks the values
	// whose feed's result was acknowledged after ask() was answered.
	asked  map[string]int
	stored map[string]bool
	// acked: a feed of the session was acknowledged, so it is stored.
	acked bool
}

// v1Figures sums the function calls the workload saw.
type v1Figures struct {
	mu              sync.Mutex
	asks, reasks    int
	reaskedAfterAck []Violation
}

// driveMontyV1 runs monty.v1 sessions one after another in one slot.
func (r *scenarioRun) driveMontyV1(ctx context.Context, slot int) {
	cfg := r.e.cfg
	for n := 0; !r.stop.Load(); n++ {
		h := &SessionHistory{ID: fmt.Sprintf("v1-%d-%d-%s", slot, n, randomHex(3))}
		s := &v1Session{r: r, h: h, inst: (slot + n) % 2, asked: map[string]int{}, stored: map[string]bool{}}
		for seq := 0; seq < cfg.perSession && !r.stop.Load(); seq++ {
			v := fmt.Sprintf("%s.c0.%d", h.ID, seq)
			op := Op{Session: h.ID, Kind: Append, Value: v, ExpectState: seq > 0}
			s.feed(ctx, &op, seq%4 == 3)
			h.Ops = append(h.Ops, op)
			if op.Outcome != Acked {
				break // the session is in doubt: its final read tells
			}
		}
		s.close()
		if h.Ops == nil {
			continue
		}
		// The final read (finalReads, over HTTP) names the session by the
		// id the server gave it.
		for i := range h.Ops {
			h.Ops[i].Session = s.sidOr(h.ID)
		}
		h.ID = s.sidOr(h.ID)
		r.mu.Lock()
		r.histories = append(r.histories, h)
		r.mu.Unlock()
	}
}

func (s *v1Session) sidOr(id string) string {
	if s.sid != "" {
		return s.sid
	}
	return id
}

func (s *v1Session) close() {
	if s.ws != nil {
		_ = s.ws.CloseNow()
		s.ws = nil
	}
}

// feed appends op.Value (from ask() when viaAsk) until it is acknowledged,
// found applied, or the operation's time is up.
func (s *v1Session) feed(ctx context.Context, op *Op, viaAsk bool) {
	op.Call = time.Now()
	deadline := op.Call.Add(s.r.client.opTimeout)
	v := op.Value
	value := fmt.Sprintf("%q", v)
	if viaAsk {
		value = fmt.Sprintf("ask(%q)", v)
	}
	code := fmt.Sprintf("log.append(%s)\nlog", value)
	if !op.ExpectState {
		code = fmt.Sprintf("log = []\nlog.append(%s)\nlog", value)
	}
	inDoubt := false
	for time.Now().Before(deadline) {
		a := Attempt{Instance: s.inst, Start: time.Now()}
		list, class, detail := s.attempt(ctx, code, v, inDoubt)
		a.End, a.Class, a.Detail = time.Now(), class, detail
		op.Attempts = append(op.Attempts, a)
		if class == "200" {
			op.Outcome, op.List, op.Return = Acked, list, a.End
			s.acked = true
			return
		}
		if class == "ws not_found" && s.acked {
			break // the store lost the session (the final read says so)
		}
		// The turn's outcome is in doubt once an attempt may have sent it
		// to a stored session (not when the session was never stored);
		// the next attempt goes to the other instance.
		inDoubt = s.sid != ""
		s.close()
		s.inst = 1 - s.inst
		pause := 100 * time.Millisecond
		if class == "ws busy" {
			pause = 250 * time.Millisecond // the dead holder's claim lapses
		}
		time.Sleep(pause)
	}
	op.Outcome, op.Return = Unknown, time.Now()
}

// attempt makes one try: connect (and load the session) when needed,
// find out whether a feed in doubt was applied, then feed.
func (s *v1Session) attempt(ctx context.Context, code, v string, inDoubt bool) (list []string, class, detail string) {
	if s.ws == nil {
		if err := s.dial(ctx); err != nil {
			return nil, "ws dial", err.Error()
		}
		var ev *pb.ChildEvent
		var err error
		if s.sid == "" {
			ev, err = s.turn(ctx, &pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: &pb.Configure{ProtocolVersion: protocol.Version}}}, v)
		} else {
			ev, err = s.turn(ctx, &pb.ParentRequest{Kind: &pb.ParentRequest_Load{Load: &pb.Load{State: []byte(s.sid)}}}, v)
		}
		if err != nil {
			return nil, closeClass(err), err.Error()
		}
		if c := classOf(ev); c != "" {
			if c == "ws not_found" && !s.acked {
				// Its first turn was never stored: a new session.
				s.sid = ""
			}
			return nil, c, eventText(ev)
		}
		if s.sid == "" {
			s.sid = string(ev.GetSessionId())
		}
		if ev.GetComplete() != nil {
			// A feed loaded suspended on ask() was answered and went on:
			// that was the feed in doubt.
			return s.listOf(ev)
		}
	}
	if inDoubt {
		ev, err := s.turn(ctx, &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: "log"}}}, v)
		if err != nil {
			return nil, closeClass(err), err.Error()
		}
		if c := classOf(ev); c != "" {
			return nil, c, eventText(ev)
		}
		if l, c, d := s.listOf(ev); c != "200" || slices.Contains(l, v) {
			return l, c, d // applied before the connection broke
		}
	}
	ev, err := s.turn(ctx, &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: code}}}, v)
	if err != nil {
		return nil, closeClass(err), err.Error()
	}
	if c := classOf(ev); c != "" {
		return nil, c, eventText(ev)
	}
	return s.listOf(ev)
}

// dial connects to the session's instance.
func (s *v1Session) dial(ctx context.Context) error {
	url := "ws" + strings.TrimPrefix(s.r.instances[s.inst].front.url(), "http") + "/"
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"X-Api-Key": {apiKey}}})
	if err != nil {
		return err
	}
	ws.SetReadLimit(16 << 20)
	s.ws = ws
	return nil
}

// turn sends req and returns the turn-ending event, answering ask()
// (which returns its argument) as often as it is asked.
func (s *v1Session) turn(ctx context.Context, req *pb.ParentRequest, v string) (*pb.ChildEvent, error) {
	timeout := time.Duration(s.r.client.limitMS)*time.Millisecond + s.r.client.http.Timeout
	for {
		b, err := proto.Marshal(req)
		if err != nil {
			return nil, err
		}
		tctx, cancel := context.WithTimeout(ctx, timeout)
		err = s.ws.Write(tctx, websocket.MessageBinary, b)
		var ev *pb.ChildEvent
		for err == nil {
			var data []byte
			if _, data, err = s.ws.Read(tctx); err == nil {
				ev = &pb.ChildEvent{}
				if err = proto.Unmarshal(data, ev); err == nil && ev.GetPrint() == nil {
					break
				}
			}
		}
		cancel()
		if err != nil {
			return nil, err
		}
		fc := ev.GetFunctionCall()
		if fc == nil {
			if ev.GetComplete() != nil && s.asked[v] > 0 {
				s.stored[v] = true
			}
			return ev, nil
		}
		args, err := protocol.DecodeValues(fc.GetValues(), fc.GetArgs()...)
		if err != nil || fc.GetFunctionName() != "ask" || len(args) != 1 {
			return nil, fmt.Errorf("unexpected function call %s%v: %v", fc.GetFunctionName(), args, err)
		}
		arg, _ := args[0].(object.Str)
		s.count(string(arg))
		values, roots, err := protocol.EncodeValues(arg)
		if err != nil {
			return nil, err
		}
		req = &pb.ParentRequest{Kind: &pb.ParentRequest_ResumeCall{ResumeCall: &pb.ResumeCall{CallId: fc.GetCallId(), Values: values,
			Result: &pb.ExtFunctionResult{Kind: &pb.ExtFunctionResult_ReturnValue{ReturnValue: roots[0]}}}}}
	}
}

// count records an ask of ask(v); one after v's feed was acknowledged is
// a violation: the store lost a turn it acknowledged.
func (s *v1Session) count(v string) {
	f := &s.r.v1
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asks++
	if s.asked[v] > 0 {
		f.reasks++
	}
	if s.stored[v] {
		f.reaskedAfterAck = append(f.reaskedAfterAck, Violation{"function_reasked", s.sid,
			fmt.Sprintf("ask(%q) was asked again after its feed's result was acknowledged", v)})
	}
	s.asked[v]++
}

// listOf reads the list a completed feed returned.
func (s *v1Session) listOf(ev *pb.ChildEvent) ([]string, string, string) {
	c := ev.GetComplete()
	if c == nil {
		return nil, "ws unexpected", eventText(ev)
	}
	vs, err := protocol.DecodeValues(c.GetValues(), c.GetValue())
	if err != nil {
		return nil, "ws unexpected", err.Error()
	}
	items, _ := vs[0].(object.List)
	out := make([]string, 0, len(items))
	for _, it := range items {
		str, _ := it.(object.Str)
		out = append(out, string(str))
	}
	return out, "200", ""
}

// classOf is the class of an event that is not a feed's result or a
// load's or configure's Ok ("" for those): the server's refusals, which
// the policy checks are clear.
func classOf(ev *pb.ChildEvent) string {
	switch {
	case ev.GetOk() != nil, ev.GetComplete() != nil:
		return ""
	case ev.GetShutdown() != nil:
		return "ws shutdown"
	}
	msg := eventText(ev)
	switch {
	case strings.Contains(msg, "is busy"):
		return "ws busy"
	case strings.Contains(msg, "could not be stored"), strings.Contains(msg, "taken over by another"):
		return "ws not_stored"
	case strings.Contains(msg, "store could not be read"):
		return "ws store_unavailable"
	case strings.Contains(msg, "no session or record"):
		return "ws not_found"
	}
	return "ws error"
}

// closeClass is the class of a turn that ended with its connection: a
// close that says why (the claim lost, a turn not stored) or a broken one.
func closeClass(err error) string {
	switch websocket.CloseStatus(err) {
	case websocket.StatusTryAgainLater:
		return "ws claim_lost"
	case websocket.StatusInternalError:
		return "ws not_stored"
	}
	return "ws disconnect"
}

// eventText is what an event says, for reports.
func eventText(ev *pb.ChildEvent) string {
	if e := ev.GetError(); e != nil {
		return e.GetException().GetExcType() + ": " + e.GetException().GetMessage()
	}
	if e := ev.GetFatalError(); e != nil {
		return "fatal: " + e.GetMessage()
	}
	return fmt.Sprint(ev)
}
