//go:build !monty_lean

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/store/storetest"
)

// wipeServer is an MCP server (the official Go SDK, over streamable HTTP)
// whose wipe tool is annotated destructiveHint, so its calls wait for a
// person's approval. It records every call it serves with the
// idempotency key of its _meta; while hold is set, a call waits until
// its request ends (its client died), after saying so on started.
type wipeServer struct {
	url     string
	mu      sync.Mutex
	keys    []string // idempotency key of each call served
	hold    bool
	started chan string
}

func newWipeServer(t *testing.T) *wipeServer {
	w := &wipeServer{started: make(chan string, 16)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ops", Version: "1"}, nil)
	destructive := true
	srv.AddTool(&mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			key, _ := req.Params.Meta[mcpclient.MetaIdempotencyKey].(string)
			w.mu.Lock()
			w.keys = append(w.keys, key)
			hold := w.hold
			w.mu.Unlock()
			if hold {
				w.started <- key
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	w.url = hs.URL
	return w
}

func (w *wipeServer) calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.keys...)
}

func (w *wipeServer) setHold(on bool) {
	w.mu.Lock()
	w.hold = on
	w.mu.Unlock()
}

// buildMonty builds cmd/monty into the test's temporary directory (the
// build cache makes the second build of a run a link).
func buildMonty(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "monty")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/monty-go/monty/cmd/monty").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// servedProcess is a `monty serve` in a process of its own.
type servedProcess struct {
	url  string
	cmd  *exec.Cmd
	log  *servedLog
	done chan struct{}
}

// startServeProcess starts `monty serve args...` as a process on a free
// port; the test's end stops it.
func startServeProcess(t *testing.T, bin string, env []string, args ...string) *servedProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &servedProcess{cmd: cmd, log: &servedLog{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.log.mu.Lock()
			p.log.lines = append(p.log.lines, sc.Text())
			p.log.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
		close(addr)
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	a, ok := <-addr
	if !ok {
		t.Fatalf("monty serve did not start: %s", p.log)
	}
	p.url = "http://" + a
	return p
}

// kill ends the process at once (SIGKILL): no shutdown, no cleanup.
func (p *servedProcess) kill(t *testing.T) {
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
}

// post sends a JSON request with the API key and returns the status and
// the body.
func post(t *testing.T, url, key, body string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

// pausedRun is what the tests read of a paused answer.
type pausedRun struct {
	Status        string `json:"status"`
	RunID         string `json:"run_id"`
	PreviousRunID string `json:"previous_run_id"`
	SessionID     string `json:"session_id"`
	Calls         []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Approval   bool   `json:"approval"`
		MayHaveRun bool   `json:"may_have_run"`
	} `json:"calls"`
	Result json.RawMessage `json:"result"`
	Code   string          `json:"code"`
}

func decode(t *testing.T, data []byte) pausedRun {
	t.Helper()
	var p pausedRun
	require.NoError(t, json.Unmarshal(data, &p), string(data))
	return p
}

// approvalServers builds monty and starts two `monty serve` processes on
// one Redis store, both connecting the wipe server, with a named API key.
func approvalServers(t *testing.T, lease time.Duration) (*wipeServer, [2]*servedProcess, string) {
	t.Helper()
	redisURL := storetest.RedisURL(t)
	bin := buildMonty(t)
	wipes := newWipeServer(t)
	const key = "race-secret-key-0123456789"
	env := []string{"MONTY_SIGNING_KEY=race-signing-key-0123456789abcdef"}
	args := []string{"--store", redisURL, "--api-key", "ops-team=" + key, "--connect", "ops=" + wipes.url,
		"--claim-lease", lease.String()}
	var servers [2]*servedProcess
	for i := range servers {
		servers[i] = startServeProcess(t, bin, env, args...)
	}
	return wipes, servers, key
}

// pauseAtWipe runs code that calls ops.wipe in a new session and returns
// the paused answer.
func pauseAtWipe(t *testing.T, srv *servedProcess, key string) pausedRun {
	t.Helper()
	status, data := post(t, srv.url+"/exec", key, `{"code": "r = await ops.wipe(target=\"prod\")\nr"}`)
	require.Equal(t, http.StatusOK, status, string(data))
	p := decode(t, data)
	require.Equal(t, "paused", p.Status, string(data))
	require.Len(t, p.Calls, 1)
	require.True(t, p.Calls[0].Approval)
	return p
}

func approveBody(id string, approve bool) string {
	return fmt.Sprintf(`{"results": [{"id": %q, "approve": %v}]}`, id, approve)
}

// TestApprovalRaceAcrossProcesses: two `monty serve` processes share a
// Redis store; several resumes approving the same paused call race on
// both. Exactly one makes the call and completes the run; every other one
// gets 409 run_not_paused, and the call was made once.
func TestApprovalRaceAcrossProcesses(t *testing.T) {
	wipes, servers, key := approvalServers(t, time.Minute)
	p := pauseAtWipe(t, servers[0], key)
	const racers = 6
	type answer struct {
		status int
		data   []byte
	}
	answers := make(chan answer, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, data := post(t, servers[i%2].url+"/runs/"+p.RunID+"/resume", key, approveBody(p.Calls[0].ID, true))
			answers <- answer{status, data}
		}()
	}
	close(start)
	wg.Wait()
	close(answers)
	completed := 0
	for a := range answers {
		if a.status == http.StatusOK {
			completed++
			done := decode(t, a.data)
			assert.Equal(t, "completed", done.Status, string(a.data))
			assert.JSONEq(t, `"wiped"`, string(done.Result))
			continue
		}
		assert.Equal(t, http.StatusConflict, a.status, string(a.data))
		var e struct{ Error, Message string }
		require.NoError(t, json.Unmarshal(a.data, &e))
		assert.Equal(t, "run_not_paused", e.Error, string(a.data))
	}
	assert.Equal(t, 1, completed, "exactly one resume completes the run")
	assert.Len(t, wipes.calls(), 1, "the approved call was made exactly once")
}

// TestApprovalCrashAfterClaim: the process that claimed the run is killed
// (SIGKILL) while the approved call is under way. A resume on the other
// process waits while the dead one's claims hold, then reports that the
// call may have run, listing the run again, and does not make it; a
// retry of the old decision makes nothing either. Only a new decision on
// the new run_id makes the call again, with the same idempotency key.
// The decisions are in the run's events, the log and the session's info,
// naming the API key by its name, never the key itself.
func TestApprovalCrashAfterClaim(t *testing.T) {
	const lease = 4 * time.Second
	wipes, servers, key := approvalServers(t, lease)
	a, b := servers[0], servers[1]
	p := pauseAtWipe(t, a, key)
	wipes.setHold(true)
	go func() {
		// Its process dies under it: the request fails, as it should.
		req, _ := http.NewRequest("POST", a.url+"/runs/"+p.RunID+"/resume", strings.NewReader(approveBody(p.Calls[0].ID, true)))
		req.Header.Set("x-api-key", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	firstKey := <-wipes.started // the claim is stored before the call is made
	claimedBy := time.Now()
	a.kill(t)
	wipes.setHold(false)

	// The dead process's claims lapse: its claim on the session (a lease
	// in the store, which the resume waits for) and the run's claim. Its
	// holder is taken to have died.
	status, data := post(t, b.url+"/runs/"+p.RunID+"/resume", key, approveBody(p.Calls[0].ID, true))
	assert.False(t, time.Now().Before(claimedBy.Add(lease)), "answered only once the run's claim lapsed")
	require.Equal(t, http.StatusOK, status, string(data))
	relisted := decode(t, data)
	assert.Equal(t, "paused", relisted.Status)
	assert.Equal(t, p.RunID, relisted.PreviousRunID)
	assert.NotEqual(t, p.RunID, relisted.RunID)
	require.Len(t, relisted.Calls, 1)
	assert.True(t, relisted.Calls[0].MayHaveRun, string(data))
	assert.Len(t, wipes.calls(), 1, "may have run: not made again without a new decision")

	status, data = post(t, b.url+"/runs/"+p.RunID+"/resume", key, approveBody(p.Calls[0].ID, true))
	require.Equal(t, http.StatusOK, status, string(data))
	assert.Equal(t, relisted.RunID, decode(t, data).RunID, "a retry of the old decision gets the listing again")
	assert.Len(t, wipes.calls(), 1)

	// The new decision, streamed: the events carry it.
	status, data = post(t, b.url+"/runs/"+relisted.RunID+"/resume", key, approveBody(relisted.Calls[0].ID, true), "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, status, string(data))
	calls := wipes.calls()
	require.Len(t, calls, 2, "made again once decided anew")
	assert.Equal(t, firstKey, calls[1], "the same idempotency key on both attempts")
	assert.Regexp(t, `^mgik-[0-9a-f]{32}$`, firstKey)
	var decided map[string]any
	for _, line := range strings.Split(string(data), "\n") {
		var ev struct {
			Type  string         `json:"type"`
			Name  string         `json:"name"`
			Value map[string]any `json:"value"`
		}
		if js, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(js), &ev) == nil && ev.Name == "approval_decision" {
			decided = ev.Value
		}
	}
	require.NotNil(t, decided, "the stream reports the decision: %s", data)
	assert.Equal(t, "ops-team", decided["who"])
	assert.Equal(t, "ops.wipe", decided["tool"])
	assert.Equal(t, "ok", decided["outcome"])
	assert.Equal(t, firstKey, decided["idempotency_key"])
	assert.Contains(t, string(data), `"wiped"`)

	req, err := http.NewRequest("GET", b.url+"/state/"+p.SessionID+"/info", nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var got struct {
		Decisions []struct {
			Who, Tool, Outcome, Args string
			Key                      string `json:"idempotency_key"`
			Approved                 bool
		}
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Len(t, got.Decisions, 2, string(raw))
	assert.Equal(t, "may_have_run", got.Decisions[0].Outcome)
	assert.Equal(t, "ok", got.Decisions[1].Outcome)
	for _, d := range got.Decisions {
		assert.Equal(t, "ops-team", d.Who)
		assert.Equal(t, "ops.wipe", d.Tool)
		assert.Equal(t, firstKey, d.Key)
		assert.True(t, d.Approved)
	}
	for _, d := range got.Decisions {
		assert.Equal(t, `ops.wipe(target='prod')`, d.Args)
	}
	assert.NotContains(t, string(raw), key, "the API key is never recorded")
	logs := b.log.String()
	assert.Contains(t, logs, `"msg":"approval decision"`)
	assert.Contains(t, logs, `"who":"ops-team"`)
	assert.NotContains(t, logs, key)
}
