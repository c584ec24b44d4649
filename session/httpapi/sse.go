package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agui"
)

// Streaming: a request whose Accept header names text/event-stream gets
// its run's events as server-sent AG-UI events while the code runs (see
// docs/http.md, "Live events").

// sseWriteTimeout bounds the writing of one frame: a client that reads
// nothing for this long is treated as gone, and its run is cancelled.
const sseWriteTimeout = 10 * time.Second

// errClientGone is the cause of a streamed run's cancellation when its
// client stopped reading.
var errClientGone = errors.New("httpapi: the client stopped reading the event stream")

// wantsEvents reports whether r asks for server-sent events: its Accept
// header lists text/event-stream (with a q above 0).
func wantsEvents(r *http.Request) bool {
	for _, accept := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(accept, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/event-stream" {
				continue
			}
			if q, ok := params["q"]; !ok {
				return true
			} else if f, err := strconv.ParseFloat(q, 64); err == nil && f > 0 {
				return true
			}
		}
	}
	return false
}

// streamRun runs what a streamed request asks for, reporting the run's
// events to sink as they happen (typically through an agent.Recorder made
// with sink: its RunStarted opens the stream). It returns the answer the
// request would get as JSON: the 200 body, or the error. sink may be
// called from several goroutines but not at once (as agent.Recorder
// does); the run's own RunFinished or RunError is dropped, since the
// answer ends the stream.
type streamRun func(ctx context.Context, sink func(agent.Event)) (any, *apiError)

// stream answers a request with the events of one run as server-sent
// AG-UI events, each a "data: <json>" frame flushed as it comes: the run
// runs with a context that ends when the client goes away (ctx's end, or a
// frame not written within sseWriteTimeout). The last frame carries the
// answer: RUN_FINISHED with the 200 body as "result", or RUN_ERROR with
// the error's code and message and the whole error body as "rawEvent".
// RUN_FINISHED's outcome is the answer's own when it has an outcome()
// method (*ExecResponse: an interrupt for a paused run), else success.
// threadID and runID are RUN_STARTED's and RUN_FINISHED's threadId and
// runId.
//
// When run fails before any event was sent, nothing has been written and
// stream returns the error, for the caller to answer as JSON with its
// status; otherwise it returns nil.
func (h *Handler) stream(ctx context.Context, w http.ResponseWriter, threadID, runID string, run streamRun) *apiError {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &sseStream{w: w, rc: http.NewResponseController(w), cancel: cancel,
		adapter: agui.Adapter{ThreadID: threadID, RunID: runID}}
	defer s.done()
	res, aerr := run(ctx, func(e agent.Event) {
		if e.Type != agent.RunFinished && e.Type != agent.RunError {
			s.send(s.adapter.Convert(e))
		}
	})
	if !s.opened() {
		if aerr != nil {
			return aerr
		}
		s.send(&agui.RunStartedEvent{Base: base(agui.RunStartedType, nil), ThreadID: threadID, RunID: runID, ProtocolVersion: agui.ProtocolVersion})
	}
	if aerr != nil {
		level := slog.LevelWarn
		if aerr.status >= 500 {
			level = slog.LevelError
		}
		attrs := []slog.Attr{slog.String("run_id", runID), slog.Int("status", aerr.status), slog.String("error", aerr.code), slog.String("message", aerr.msg)}
		if aerr.detail != "" {
			attrs = append(attrs, slog.String("detail", aerr.detail))
		}
		h.log.LogAttrs(ctx, level, "streamed run failed", attrs...)
		s.send(&agui.RunErrorEvent{Base: base(agui.RunErrorType, marshal(errorBody(aerr))), Message: aerr.msg, Code: aerr.code})
		return nil
	}
	outcome := &agui.Outcome{Type: agui.OutcomeSuccess}
	if o, ok := res.(interface{ outcome() *agui.Outcome }); ok {
		outcome = o.outcome()
	}
	s.send(&agui.RunFinishedEvent{Base: base(agui.RunFinishedType, nil), ThreadID: threadID, RunID: runID, Result: marshal(res), Outcome: outcome})
	return nil
}

// base is the common part of an event the stream makes itself.
func base(t agui.EventType, raw json.RawMessage) agui.Base {
	return agui.Base{Type: t, Timestamp: time.Now().UnixMilli(), RawEvent: raw}
}

// errorBody is the body of the JSON answer for e.
func errorBody(e *apiError) ErrorResponse {
	body := ErrorResponse{}
	if e.body != nil {
		body = *e.body
	}
	body.Error, body.Message = e.code, e.msg
	return body
}

// marshal is v's JSON as writeJSON writes it (no HTML escaping).
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		_ = enc.Encode(ErrorResponse{Error: "internal", Message: "encoding the answer: " + err.Error()})
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// sseStream writes the frames of one response. It is safe for concurrent
// use.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	adapter agui.Adapter
	cancel  context.CancelCauseFunc
	started bool  // the headers are sent
	err     error // the first write that failed: nothing more is sent
}

func (s *sseStream) opened() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// send writes one frame and flushes it; the first failure cancels the
// run.
func (s *sseStream) send(ev agui.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if !s.started {
		hd := s.w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	// A writer that cannot set deadlines or flush (a test recorder) still
	// gets every frame, only not live.
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	err := agui.WriteSSE(s.w, ev)
	if err == nil {
		if err = s.rc.Flush(); errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	if err != nil {
		s.err = err
		s.cancel(errClientGone)
	}
}

// done clears the write deadline: the connection may serve further
// requests, which the server does not give one when it has no
// WriteTimeout.
func (s *sseStream) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
}

// Unwrap gives http.ResponseController the underlying writer, so that a
// stream can flush each frame and set write deadlines.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
