package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/agui/aguitest"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/tools"
)

// events is an open event stream of POST /exec.
type events struct {
	t      *testing.T
	resp   *http.Response
	r      *bufio.Reader
	stream aguitest.Stream
	cancel context.CancelFunc
}

// streamExec posts req to /exec asking for events, and checks the
// response's headers.
func (c *client) streamExec(t *testing.T, req map[string]any, header ...string) *events {
	t.Helper()
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	hreq, err := http.NewRequestWithContext(ctx, "POST", c.s.srv.URL+"/exec", bytes.NewReader(body))
	require.NoError(t, err)
	hreq.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		hreq.Header.Set(header[i], header[i+1])
	}
	if c.key != "" {
		hreq.Header.Set("x-api-key", c.key)
	}
	resp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	return &events{t: t, resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
}

// next reads the next frame, checks it against the protocol and returns
// its fields; nil at the end of the stream.
func (e *events) next() map[string]any {
	e.t.Helper()
	var data []byte
	for {
		line, err := e.r.ReadString('\n')
		if errors.Is(err, io.EOF) && line == "" && data == nil {
			return nil
		}
		require.NoError(e.t, err)
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			break
		}
		payload, ok := strings.CutPrefix(line, "data: ")
		require.True(e.t, ok, "a frame line that is not data: %q", line)
		data = append(data, payload...)
	}
	ev, err := e.stream.Add(data)
	require.NoError(e.t, err)
	return ev
}

// rest reads the frames to the end and checks that the run ended.
func (e *events) rest() []map[string]any {
	e.t.Helper()
	for e.next() != nil {
	}
	require.NoError(e.t, e.stream.End())
	return e.stream.Events
}

// brief renders events compactly.
func briefEvents(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		s := ev["type"].(string)
		for _, k := range []string{"toolCallName", "delta", "content", "code"} {
			if v, ok := ev[k]; ok {
				s += fmt.Sprintf(" %q", v)
			}
		}
		out[i] = s
	}
	return out
}

// execResponse decodes what the last frame carries.
func finished(t *testing.T, ev map[string]any) *httpapi.ExecResponse {
	t.Helper()
	require.Equal(t, "RUN_FINISHED", ev["type"], "%v", ev)
	b, err := json.Marshal(ev["result"])
	require.NoError(t, err)
	var resp httpapi.ExecResponse
	require.NoError(t, json.Unmarshal(b, &resp))
	return &resp
}

func failed(t *testing.T, ev map[string]any) httpapi.ErrorResponse {
	t.Helper()
	require.Equal(t, "RUN_ERROR", ev["type"], "%v", ev)
	b, err := json.Marshal(ev["rawEvent"])
	require.NoError(t, err)
	var e httpapi.ErrorResponse
	require.NoError(t, json.Unmarshal(b, &e))
	assert.Equal(t, e.Error, ev["code"])
	assert.Equal(t, e.Message, ev["message"])
	return e
}

// A run streams print output as it is printed and host calls as they are
// made, and ends with the data of the JSON answer.
func TestStreamExec(t *testing.T) {
	seen := make(chan struct{})
	gate := tools.MustFunc(tools.Schema{Name: "gate", Description: "Returns 21 once the client has seen some output."},
		func(ctx context.Context) (int, error) {
			select {
			case <-seen:
				return 21, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		})
	reg, err := tools.NewRegistry(gate)
	require.NoError(t, err)
	c := newServer(t, httpapi.Options{Functions: reg}).client("")
	code := "import sys\nprint('one')\nprint('two')\nv = gate()\nprint('warn', file=sys.stderr)\nprint('three', v)\nv * 2"

	evs := c.streamExec(t, map[string]any{"code": code, "session_id": "live"})
	// gate blocks the run until the client has seen text: the text came
	// while the code ran.
	for {
		ev := evs.next()
		require.NotNil(t, ev, "the stream ended before any text")
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			close(seen)
			break
		}
	}
	all := evs.rest()
	runID := all[0]["runId"].(string)
	assert.True(t, strings.HasPrefix(runID, "run-"), runID)
	assert.Equal(t, "live", all[0]["threadId"])
	assert.Equal(t, []string{
		"RUN_STARTED",
		"TEXT_MESSAGE_START",
		`TEXT_MESSAGE_CONTENT "one\n"`,
		`TEXT_MESSAGE_CONTENT "two\n"`,
		"TEXT_MESSAGE_END",
		"STEP_STARTED",
		`TOOL_CALL_START "gate"`,
		`TOOL_CALL_ARGS "{}"`,
		"TOOL_CALL_END",
		`TOOL_CALL_RESULT "21"`,
		"STEP_FINISHED",
		"TEXT_MESSAGE_START",
		`TEXT_MESSAGE_CONTENT "warn\n"`,
		"TEXT_MESSAGE_END",
		"TEXT_MESSAGE_START",
		`TEXT_MESSAGE_CONTENT "three 21\n"`,
		"TEXT_MESSAGE_END",
		"RUN_FINISHED",
	}, briefEvents(all))
	assert.Equal(t, all[5]["stepName"], all[6]["toolCallId"], "the step is the call")

	got := finished(t, all[len(all)-1])
	assert.Equal(t, map[string]any{"type": "success"}, all[len(all)-1]["outcome"])
	assert.Equal(t, "live", got.SessionID)
	assert.Equal(t, "one\ntwo\nthree 21\n", got.Stdout)
	assert.Equal(t, "warn\n", got.Stderr)
	assert.JSONEq(t, "42", string(got.Result))
	assert.True(t, got.StateSaved)
	status, _, info := c.do("GET", "/state/live/info", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(info), got.StateHash, "the stored state is the one the last frame names")

	// The same code answered as JSON (gate no longer waits) carries the
	// same data, but for the session, the time and the state's bytes.
	status, want, _ := c.exec(map[string]any{"code": code, "session_id": "json"})
	require.Equal(t, http.StatusOK, status)
	for _, r := range []*httpapi.ExecResponse{got, want} {
		r.SessionID, r.StateHash, r.StateSize, r.DurationMS = "", "", 0, 0
	}
	assert.Equal(t, want, got)

	// The session continues, streamed or not.
	evs = c.streamExec(t, map[string]any{"code": "v + 1", "session_id": "live"})
	assert.JSONEq(t, "22", string(finished(t, evs.rest()[1]).Result))
}

// A client that goes away stops its run; the session keeps its state.
func TestStreamDisconnect(t *testing.T) {
	entered, stopped := make(chan struct{}), make(chan error, 1)
	block := tools.MustFunc(tools.Schema{Name: "block"}, func(ctx context.Context) error {
		close(entered)
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	})
	reg, err := tools.NewRegistry(block)
	require.NoError(t, err)
	s := newServer(t, httpapi.Options{Functions: reg})
	c := s.client("")

	evs := c.streamExec(t, map[string]any{"code": "print('hi')\nblock()", "session_id": "gone"})
	for ev := evs.next(); ev["type"] != "TOOL_CALL_END"; ev = evs.next() {
		require.NotNil(t, ev, "the stream ended before the call")
	}
	<-entered
	evs.cancel()
	select {
	case err := <-stopped:
		assert.ErrorIs(t, err, context.Canceled, "cancelled, not stopped by its time limit")
	case <-time.After(3 * time.Second): // the run's time limit is 5 s
		t.Fatal("the run went on after its client left")
	}
	require.NoError(t, s.h.Shutdown(context.Background()), "the request ends")
	_, err = s.store.Get(context.Background(), "public/gone")
	assert.ErrorIs(t, err, store.ErrNotFound, "a cancelled first call stores nothing")
}

// Failures once the stream has started end it with RUN_ERROR carrying the
// JSON error answer; an exception is a finished run with exit_code 1, as
// in JSON; failures before the run are JSON errors.
func TestStreamErrors(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: []string{"k"}})
	c := s.client("k")

	// A limit mid-run: what was printed streamed, then RUN_ERROR.
	evs := c.streamExec(t, map[string]any{"code": "print('start')\nfor i in range(1000):\n    print('x' * 99)",
		"session_id": "lim", "limits": map[string]any{"output_bytes": 1000}})
	all := evs.rest()
	e := failed(t, all[len(all)-1])
	assert.Equal(t, "output_limit", e.Error)
	assert.Equal(t, "lim", e.SessionID)
	assert.True(t, strings.HasPrefix(e.Stdout, "start\n"), e.Stdout)
	require.NotNil(t, e.Exception)
	var streamed strings.Builder
	for _, ev := range all {
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			streamed.WriteString(ev["delta"].(string))
		}
	}
	assert.Equal(t, e.Stdout, streamed.String())
	assert.LessOrEqual(t, streamed.Len(), 1000, "the output limit bounds the stream")

	evs = c.streamExec(t, map[string]any{"code": "print('start')\nwhile True:\n    pass", "limits": map[string]any{"duration_ms": 200}})
	all = evs.rest()
	assert.Equal(t, []string{"RUN_STARTED", "TEXT_MESSAGE_START", `TEXT_MESSAGE_CONTENT "start\n"`, "TEXT_MESSAGE_END", `RUN_ERROR "time_limit"`}, briefEvents(all))
	assert.Equal(t, "time_limit", failed(t, all[len(all)-1]).Error)

	// An exception is the code's outcome, as in the JSON answer (200).
	evs = c.streamExec(t, map[string]any{"code": "1/0"})
	got := finished(t, evs.rest()[1])
	assert.Equal(t, 1, got.ExitCode)
	require.NotNil(t, got.Error)
	assert.Equal(t, "ZeroDivisionError", got.Error.Type)

	// Before the run: JSON errors with their status.
	for _, h := range []struct {
		key, body string
		status    int
	}{
		{"k", `{"code": ""}`, http.StatusBadRequest},
		{"", `{"code": "1"}`, http.StatusUnauthorized},
		{"k", `{"code": "1", "session_id": "../x"}`, http.StatusBadRequest},
	} {
		status, hd, body := s.client(h.key).do("POST", "/exec", []byte(h.body), "Accept", "text/event-stream")
		assert.Equal(t, h.status, status, h.body)
		assert.Equal(t, "application/json", hd.Get("Content-Type"))
		assert.True(t, json.Valid(body))
	}

	// Accept decides: q=0 refuses the stream, a list may offer it.
	status, hd, _ := c.do("POST", "/exec", []byte(`{"code": "1"}`), "Accept", "text/event-stream;q=0, application/json")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", hd.Get("Content-Type"))
	status, hd, _ = c.do("POST", "/exec", []byte(`{"code": "1"}`), "Accept", "application/json;q=0.5, text/event-stream;q=0.9")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "text/event-stream", hd.Get("Content-Type"))
}
