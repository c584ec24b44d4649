package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// pausedAnswer decodes a 200 answer that must be paused.
func pausedAnswer(t *testing.T, status int, body []byte) httpapi.ExecResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, status, string(body))
	var resp httpapi.ExecResponse
	require.NoError(t, json.Unmarshal(body, &resp))
	require.Equal(t, httpapi.StatusPaused, resp.Status, string(body))
	require.NotEmpty(t, resp.RunID)
	return resp
}

func resumeBody(results ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"results": results})
	return b
}

// TestClientToolsAcrossInstances: a run pauses at a client tool on one
// instance and is resumed on another sharing the store; gathered async
// tools pause once with every call; each run_id is resumed once.
func TestClientToolsAcrossInstances(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	b := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")

	body, _ := json.Marshal(map[string]any{
		"code": "city = get_city('ada')\nweather = await get_weather(city)\n(city, weather)",
		"tools": []map[string]any{
			{"name": "get_city", "description": "where someone lives", "parameters": map[string]any{"type": "object"}},
			{"name": "get_weather", "async": true},
		},
	})
	status, _, data := a.do("POST", "/exec", body)
	p := pausedAnswer(t, status, data)
	require.Len(t, p.Calls, 1)
	assert.Equal(t, "get_city", p.Calls[0].Name)
	assert.True(t, p.Calls[0].Blocking, "the sync call the code is stopped at")
	assert.Positive(t, p.DurationMS)
	assert.Equal(t, []json.RawMessage{json.RawMessage(`"ada"`)}, p.Calls[0].Args)
	assert.NotEmpty(t, p.RunExpires)
	assert.True(t, p.StateSaved)

	// While paused, the session runs nothing else.
	status, _, data = b.do("POST", "/exec", []byte(`{"code": "1", "session_id": "`+p.SessionID+`"}`))
	wantError(t, "exec while paused", status, data, http.StatusConflict, "run_paused")

	status, _, data = b.do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "value": "Oslo"}))
	p2 := pausedAnswer(t, status, data)
	assert.NotEqual(t, p.RunID, p2.RunID, "a new pause, a new run_id")
	require.Len(t, p2.Calls, 1)
	assert.Equal(t, "get_weather", p2.Calls[0].Name)

	status, _, data = b.do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "value": "Oslo"}))
	wantError(t, "resume twice", status, data, http.StatusConflict, "run_not_paused")

	status, _, data = a.do("POST", "/runs/"+p2.RunID+"/resume", resumeBody(map[string]any{"id": p2.Calls[0].ID, "value": map[string]any{"temp": 4}}))
	require.Equal(t, http.StatusOK, status, string(data))
	var done httpapi.ExecResponse
	require.NoError(t, json.Unmarshal(data, &done))
	assert.Equal(t, httpapi.StatusCompleted, done.Status)
	assert.JSONEq(t, `["Oslo", {"temp": 4}]`, string(done.Result))
	assert.Empty(t, done.RunID)

	r := b.run(p.SessionID, "weather['temp']")
	assert.Equal(t, json.RawMessage(`4`), r.Result, "the session goes on from the completed run")
	assert.Equal(t, httpapi.StatusCompleted, r.Status)
}

// TestResumeErrors: malformed, unknown, foreign and wrongly answered runs
// get clear 4xx answers, and an error result raises in the code.
func TestResumeErrors(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"alice", "bob"}})
	alice, bob := srv.client("alice"), srv.client("bob")
	body, _ := json.Marshal(map[string]any{"code": "try:\n    r = ask('q')\nexcept LookupError as e:\n    r = 'failed: ' + str(e)\nr",
		"tools": []map[string]any{{"name": "ask"}}})
	status, _, data := alice.do("POST", "/exec", body)
	p := pausedAnswer(t, status, data)
	id := p.Calls[0].ID

	for name, c := range map[string]struct {
		path   string
		body   []byte
		status int
		code   string
	}{
		"garbage run id": {"/runs/nope/resume", resumeBody(map[string]any{"id": id}), 404, "run_not_found"},
		"unknown run":    {"/runs/" + "dW5rbm93bg" + ".abc/resume", resumeBody(map[string]any{"id": id}), 404, "run_not_found"},
		"no results":     {"/runs/" + p.RunID + "/resume", []byte(`{"results": []}`), 400, "invalid_request"},
		"unknown call":   {"/runs/" + p.RunID + "/resume", resumeBody(map[string]any{"id": "99", "value": 1}), 400, "invalid_results"},
		"value and error": {"/runs/" + p.RunID + "/resume", resumeBody(map[string]any{"id": id, "value": 1, "error": map[string]any{"type": "KeyError"}}),
			400, "invalid_request"},
		"bad error type": {"/runs/" + p.RunID + "/resume", resumeBody(map[string]any{"id": id, "error": map[string]any{"type": "not a type"}}), 400, "invalid_request"},
		"not JSON":       {"/runs/" + p.RunID + "/resume", []byte(`{`), 400, "invalid_request"},
	} {
		status, _, data := alice.do("POST", c.path, c.body)
		wantError(t, name, status, data, c.status, c.code)
	}
	status, _, data = bob.do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": id, "value": 1}))
	wantError(t, "another key's run", status, data, 404, "run_not_found")

	status, _, data = alice.do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": id, "error": map[string]any{"type": "KeyError", "message": "nobody"}}))
	require.Equal(t, http.StatusOK, status, string(data))
	var done httpapi.ExecResponse
	require.NoError(t, json.Unmarshal(data, &done))
	assert.JSONEq(t, `"failed: 'nobody'"`, string(done.Result))
}

// TestConcurrentHTTPResumes: resumes of one run racing on two instances:
// exactly one answers 200, the others a 409.
func TestConcurrentHTTPResumes(t *testing.T) {
	st := memstore.New(memstore.Options{})
	clients := []interface {
		do(string, string, []byte, ...string) (int, http.Header, []byte)
	}{newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client(""), newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")}
	body, _ := json.Marshal(map[string]any{"code": "x = ask()\nx", "tools": []map[string]any{{"name": "ask"}}})
	status, _, data := clients[0].do("POST", "/exec", body)
	p := pausedAnswer(t, status, data)
	var wg sync.WaitGroup
	statuses := make([]int, 4) // two per instance: within its slots, even on one CPU
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _, _ = clients[i%2].do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "value": i}))
		}()
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			ok++
		} else {
			assert.Equal(t, http.StatusConflict, s)
		}
	}
	assert.Equal(t, 1, ok, "exactly one resume wins: %v", statuses)
}

// streamPost posts body to path asking for events.
func (c *client) streamPost(t *testing.T, path string, body []byte) *events {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	hreq, err := http.NewRequestWithContext(ctx, "POST", c.s.srv.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	hreq.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &events{t: t, resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
}

// TestStreamPauseResume: a streamed run that pauses reports the client
// tool calls as AG-UI tool calls, under the ids the resume answers them
// by, and ends with an interrupt outcome naming each call and the paused
// answer; the streamed resume ends with the completed one and a success
// outcome. Every frame passes the protocol checks.
func TestStreamPauseResume(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	body, _ := json.Marshal(map[string]any{"code": "print('asking')\nx = ask('q', n=2)\nprint('got', x)\nx * 2", "tools": []map[string]any{{"name": "ask"}}})
	evs := c.streamPost(t, "/exec", body).rest()
	brief := briefEvents(evs)
	assert.Contains(t, brief, `TEXT_MESSAGE_CONTENT "asking\n"`)
	assert.Contains(t, brief, `TOOL_CALL_START "ask"`)
	var args, callID string
	for _, ev := range evs {
		switch ev["type"] {
		case "TOOL_CALL_START":
			callID = ev["toolCallId"].(string)
		case "TOOL_CALL_ARGS":
			args = ev["delta"].(string)
		}
	}
	assert.JSONEq(t, `{"args": ["q"], "kwargs": {"n": 2}}`, args)
	last := evs[len(evs)-1]
	p := finished(t, last)
	require.Equal(t, httpapi.StatusPaused, p.Status)
	require.Len(t, p.Calls, 1)
	assert.Equal(t, p.Calls[0].ID, callID, "the stream's tool call is the call the resume answers")
	assert.Equal(t, map[string]any{"type": "interrupt", "interrupts": []any{map[string]any{
		"id": p.Calls[0].ID, "reason": "tool_call", "toolCallId": p.Calls[0].ID, "expiresAt": p.RunExpires,
		"message":  `the code waits for the result of ask (call "` + p.Calls[0].ID + `"): POST /runs/` + p.RunID + `/resume with it`,
		"metadata": map[string]any{"run_id": p.RunID, "tool": "ask", "blocking": true},
	}}}, last["outcome"])

	res, _ := json.Marshal(map[string]any{"results": []map[string]any{{"id": callID, "value": 21}}})
	evs = c.streamPost(t, "/runs/"+p.RunID+"/resume", res).rest()
	assert.Contains(t, briefEvents(evs), `TEXT_MESSAGE_CONTENT "got 21\n"`)
	done := finished(t, evs[len(evs)-1])
	assert.Equal(t, httpapi.StatusCompleted, done.Status)
	assert.Equal(t, json.RawMessage(`42`), done.Result)
	assert.Equal(t, map[string]any{"type": "success"}, evs[len(evs)-1]["outcome"])

	// The run is not paused any more: a streamed resume gets the JSON
	// answer's status and body, and no frame (TestRunErrorMessages has
	// the other refusals).
	status, hdr, streamed := c.do("POST", "/runs/"+p.RunID+"/resume", res, "Accept", "text/event-stream")
	assert.Equal(t, http.StatusConflict, status, string(streamed))
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	_, _, plain := c.do("POST", "/runs/"+p.RunID+"/resume", res)
	assert.JSONEq(t, string(plain), string(streamed))
}

// TestStreamInterruptsGathered: a run paused at several gathered async
// calls ends its stream with an interrupt per call, each naming one of the
// stream's tool calls, and resuming with the interrupts' tool call ids
// completes it.
func TestStreamInterruptsGathered(t *testing.T) {
	c := newServer(t, httpapi.Options{}).client("")
	body, _ := json.Marshal(map[string]any{"code": "import asyncio\nsum(await asyncio.gather(f(1), f(2), f(3)))",
		"tools": []map[string]any{{"name": "f", "async": true}}})
	evs := c.streamPost(t, "/exec", body).rest()
	p := finished(t, evs[len(evs)-1])
	interrupts := evs[len(evs)-1]["outcome"].(map[string]any)["interrupts"].([]any)
	require.Len(t, interrupts, 3)
	var results []map[string]any
	for i, in := range interrupts {
		in := in.(map[string]any)
		assert.Equal(t, p.Calls[i].ID, in["toolCallId"])
		assert.Equal(t, p.RunExpires, in["expiresAt"])
		results = append(results, map[string]any{"id": in["toolCallId"], "value": 10 * (i + 1)})
	}
	res, _ := json.Marshal(map[string]any{"results": results})
	evs = c.streamPost(t, "/runs/"+p.RunID+"/resume", res).rest()
	assert.Equal(t, json.RawMessage(`60`), finished(t, evs[len(evs)-1]).Result)
}
