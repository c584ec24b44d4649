package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/mcpclient/mcptest"
	"github.com/monty-go/monty/session/mcpserver"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// repoTools is an MCP server of the official Go SDK in this process with
// one tool that needs approval, delete_repo, counting the calls it served.
type repoTools struct {
	srv     *mcp.Server
	deletes atomic.Int32
	store   *memstore.Store // the executor's (approvalExecutor)
	log     *slog.Logger    // the executor's log of decisions (nil: slog.Default)
}

func newRepoTools() *repoTools {
	m := &repoTools{srv: mcp.NewServer(&mcp.Implementation{Name: "github", Version: "1"}, nil)}
	destructive := true
	m.srv.AddTool(&mcp.Tool{Name: "delete_repo", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.deletes.Add(1)
			var args struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + args.Name}}}, nil
		})
	return m
}

// approvalExecutor is an executor whose code can call github.delete_repo,
// which waits for a person's approval, with the given time limit.
func approvalExecutor(t *testing.T, m *repoTools, timeout time.Duration) *agent.Executor {
	t.Helper()
	reg, err := tools.NewRegistry()
	require.NoError(t, err)
	ns, err := mcpclient.Add(context.Background(), reg, mcpclient.Server{Name: "github",
		Transport: func() (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := m.srv.Connect(context.Background(), serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	m.store = memstore.New(memstore.Options{})
	keeper := session.NewManager(session.Options{Store: m.store}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper, Session: session.Options{Store: m.store, Limits: runtime.Limits{MaxDuration: timeout}},
		Functions: reg, Logger: m.log})
	require.NoError(t, err)
	t.Cleanup(keeper.Close)
	return exec
}

// decisions are the decisions stored with the conversation's session.
func (m *repoTools) decisions(t *testing.T) []session.Decision {
	t.Helper()
	obj, err := m.store.Get(context.Background(), mcpserver.DefaultThreadKey)
	require.NoError(t, err)
	in, err := session.Inspect(obj.Data, nil)
	require.NoError(t, err)
	return in.Decisions
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a logger's).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// user is the person behind a client's elicitation handler: it records
// each question and answers with the next of its answers.
type user struct {
	mu        sync.Mutex
	questions []*mcp.ElicitParams
	answers   []*mcp.ElicitResult // nil: wait until the request is cancelled
}

func (u *user) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	u.questions = append(u.questions, req.Params)
	var answer *mcp.ElicitResult
	if len(u.answers) > 0 {
		answer, u.answers = u.answers[0], u.answers[1:]
	}
	u.mu.Unlock()
	if answer == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return answer, nil
}

func (u *user) asked() []*mcp.ElicitParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), u.questions...)
}

func accept(approve bool) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}
}

// approvalClient serves exec over MCP in memory with opts and connects a
// client speaking protocol (empty: the newest) whose user is u (nil: the
// client declares no elicitation).
func approvalClient(t *testing.T, exec *agent.Executor, opts mcpserver.Options, protocol string, u *user) *mcp.ClientSession {
	t.Helper()
	opts.Executor = exec
	srv, err := mcpserver.New(opts)
	require.NoError(t, err)
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Run(ctx, serverSide) }()
	copts := &mcp.ClientOptions{}
	if u != nil {
		copts.ElicitationHandler = u.handle
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desk", Version: "1"}, copts).Connect(ctx, clientSide, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// deleteCode calls the approval tool and reports what happened.
const deleteCode = `try:
    r = await github.delete_repo(name="<b>demo</b>")
except PermissionError as e:
    r = "refused: " + str(e)
r`

// deletedText is the text of deleteCode's result once the call was made:
// the call's result, then the value.
const deletedText = "[github.delete_repo returned \"deleted <b>demo</b>\"]\n'deleted <b>demo</b>'"

func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	return res, res.Content[0].(*mcp.TextContent).Text
}

// TestApprovalAskedOfTheUser: on either protocol (elicitation/create
// requests before 2026-07-28, input requests from it), a client that
// declared elicitation has its user asked about each call that waits for
// approval, within the same tool call: accepted with approve true, the
// call is made once and the code goes on with its result; declined,
// cancelled or accepted with false, the code gets PermissionError and
// nothing is called. The question names the call, its server and its
// arguments, and asks for one boolean.
func TestApprovalAskedOfTheUser(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", ""} {
		name := protocol
		if name == "" {
			name = "newest"
		}
		t.Run(name, func(t *testing.T) {
			m := newRepoTools()
			var log syncBuffer
			m.log = slog.New(slog.NewJSONHandler(&log, nil)) // the executor's and the server's
			exec := approvalExecutor(t, m, 0)
			u := &user{answers: []*mcp.ElicitResult{accept(true), {Action: "decline"}, {Action: "cancel"}, accept(false)}}
			cs := approvalClient(t, exec, mcpserver.Options{Logger: m.log}, protocol, u)

			res, text := callTool(t, cs, "execute_python", map[string]any{"code": deleteCode})
			assert.False(t, res.IsError, text)
			assert.Equal(t, deletedText, text)
			assert.EqualValues(t, 1, m.deletes.Load())
			q := u.asked()
			require.Len(t, q, 1)
			assert.Contains(t, q[0].Message, `github.delete_repo(name='<b>demo</b>')`)
			assert.Contains(t, q[0].Message, `MCP server "github"`)
			schema, err := json.Marshal(q[0].RequestedSchema)
			require.NoError(t, err)
			assert.JSONEq(t, `{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve this call",`+
				`"description":"true makes the call; false refuses it (the code gets PermissionError)","default":false}},"required":["approve"]}`, string(schema))
			meta, _ := q[0].Meta[mcpserver.MetaKeyApproval].(map[string]any)
			require.NotNil(t, meta, "the call as data in _meta")
			assert.Equal(t, "github.delete_repo", meta["tool"])
			assert.Equal(t, "github", meta["server"])

			for range 3 { // decline, cancel, accept with false
				res, text = callTool(t, cs, "execute_python", map[string]any{"code": deleteCode})
				assert.False(t, res.IsError, text)
				assert.Contains(t, text, "refused: ")
				assert.Contains(t, text, "github.delete_repo was not approved")
			}
			assert.EqualValues(t, 1, m.deletes.Load(), "a refused call is never made")
			assert.Len(t, u.asked(), 4)
			d := m.decisions(t)
			require.Len(t, d, 4)
			for i, want := range []string{session.DecisionOK, session.DecisionDenied, session.DecisionDenied, session.DecisionDenied} {
				assert.Equal(t, "mcp client desk (the user, asked by elicitation)", d[i].Who)
				assert.Equal(t, "github.delete_repo", d[i].Tool)
				assert.Equal(t, want, d[i].Outcome)
				assert.NotEmpty(t, d[i].RunID)
			}
			// Each decision is a record of the log given to the executor.
			var logged []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
				if rec["msg"] == "approval decision" {
					logged = append(logged, rec)
				}
			}
			require.Len(t, logged, 4, log.String())
			assert.Equal(t, "ok", logged[0]["outcome"])
			assert.Equal(t, d[0].RunID, logged[0]["run_id"])
			assert.Equal(t, "mcp client desk (the user, asked by elicitation)", logged[0]["who"])
		})
	}
}

// TestApprovalNotAnsweredInTime: the user is asked within the call's
// time limit; when they do not answer, the run pauses durably, and the
// model cannot approve it with resume_python (an approve answer is
// refused and nothing is called). Naming the call alone asks the user
// again, whose approval makes it, once.
func TestApprovalNotAnsweredInTime(t *testing.T) {
	m := newRepoTools()
	exec := approvalExecutor(t, m, 2*time.Second)
	u := &user{answers: []*mcp.ElicitResult{nil}} // never answers the first question
	cs := approvalClient(t, exec, mcpserver.Options{ConsoleURL: "https://ops.example/ui"}, "2025-11-25", u)

	res, text := callTool(t, cs, "execute_python", map[string]any{"code": deleteCode})
	assert.False(t, res.IsError, text)
	var paused struct {
		RunID  string `json:"run_id"`
		Paused *struct {
			Calls []struct {
				ID       string `json:"id"`
				Approval bool   `json:"approval"`
			} `json:"calls"`
		} `json:"paused"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &paused), string(raw))
	require.NotNil(t, paused.Paused, text)
	require.Len(t, paused.Paused.Calls, 1)
	call := paused.Paused.Calls[0]
	assert.True(t, call.Approval)
	assert.Contains(t, text, "did not answer the approval of github.delete_repo within the time limit")
	assert.Contains(t, text, "decided by the user, not by you")
	assert.Contains(t, text, "https://ops.example/ui")

	for _, answer := range []map[string]any{{"id": call.ID, "approve": true}, {"id": call.ID, "value": "deleted"},
		{"id": "0" + call.ID, "value": "deleted"}, {"id": "0" + call.ID}, {"id": "0" + call.ID, "approve": true}} {
		res, text = callTool(t, cs, "resume_python", map[string]any{"run_id": paused.RunID, "results": []any{answer}})
		assert.True(t, res.IsError, text)
		if answer["id"] == call.ID || answer["approve"] != nil {
			assert.Contains(t, text, "resume_python cannot answer it")
		} else {
			assert.Contains(t, text, "is not a call of this run")
		}
	}
	assert.EqualValues(t, 0, m.deletes.Load())

	u.mu.Lock()
	u.answers = []*mcp.ElicitResult{accept(true)}
	u.mu.Unlock()
	// (The first question may not have gone out at all when running the
	// code took the whole time limit.)
	asked := len(u.asked())
	res, text = callTool(t, cs, "resume_python", map[string]any{"run_id": paused.RunID, "results": []any{map[string]any{"id": call.ID}}})
	assert.False(t, res.IsError, text)
	assert.Equal(t, deletedText, text)
	assert.EqualValues(t, 1, m.deletes.Load())
	assert.Len(t, u.asked(), asked+1, "asked again")
}

// TestApprovalsWithoutElicitation: a client without elicitation gets the
// durable pause and answers it with resume_python (the console, when
// configured, is named); under user-only the call is refused at once and
// never made.
func TestApprovalsWithoutElicitation(t *testing.T) {
	t.Run("user-first", func(t *testing.T) {
		m := newRepoTools()
		cs := approvalClient(t, approvalExecutor(t, m, 0), mcpserver.Options{ConsoleURL: "https://ops.example/ui"}, "", nil)
		res, text := callTool(t, cs, "execute_python", map[string]any{"code": deleteCode})
		assert.False(t, res.IsError, text)
		assert.Contains(t, text, "needs a person's approval")
		assert.Contains(t, text, "https://ops.example/ui")
		assert.NotContains(t, text, "decided by the user, not by you")
		r := res.StructuredContent.(map[string]any)
		calls := r["paused"].(map[string]any)["calls"].([]any)
		id := calls[0].(map[string]any)["id"].(string)
		res, text = callTool(t, cs, "resume_python", map[string]any{"run_id": r["run_id"], "results": []any{map[string]any{"id": id, "approve": true}}})
		assert.False(t, res.IsError, text)
		assert.Equal(t, deletedText, text)
		assert.EqualValues(t, 1, m.deletes.Load())
	})
	t.Run("user-only", func(t *testing.T) {
		m := newRepoTools()
		cs := approvalClient(t, approvalExecutor(t, m, 0), mcpserver.Options{Approvals: mcpserver.ApprovalsUserOnly}, "", nil)
		res, text := callTool(t, cs, "execute_python", map[string]any{"code": deleteCode})
		assert.False(t, res.IsError, text)
		assert.Contains(t, text, "refused: github.delete_repo was not approved: only a person may approve it, and this MCP client cannot ask its user")
		assert.EqualValues(t, 0, m.deletes.Load())
	})
	t.Run("unknown policy", func(t *testing.T) {
		_, err := mcpserver.New(mcpserver.Options{Executor: approvalExecutor(t, newRepoTools(), 0), Approvals: "model"})
		assert.ErrorContains(t, err, `unknown approval policy "model"`)
	})
}

// TestForgedRequestState: answers to input requests are taken only with
// the request state this server signed; an altered or invented one
// approves nothing.
func TestForgedRequestState(t *testing.T) {
	m := newRepoTools()
	exec := approvalExecutor(t, m, 0)
	// The client's automatic round trips are off, so that the test sees
	// the input-required result and can tamper with what it sends back.
	srv, err := mcpserver.New(mcpserver.Options{Executor: exec})
	require.NoError(t, err)
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Run(ctx, serverSide) }()
	u := &user{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desk", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: u.handle,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).Connect(ctx, clientSide, nil)
	require.NoError(t, err)
	defer cs.Close()

	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": deleteCode}})
	require.NoError(t, err)
	require.True(t, first.NeedsInput(), "an input-required result")
	require.Len(t, first.InputRequests, 1)
	yes := mcp.InputResponseMap{}
	for id := range first.InputRequests {
		yes[id] = accept(true)
	}
	body, mac, _ := strings.Cut(first.RequestState, ".")
	for name, state := range map[string]string{
		"invented":     "eyJ0b29sIjoiZXhlY3V0ZV9weXRob24ifQ.AAAA",
		"body altered": body + "x." + mac,
		"mac altered":  body + "." + strings.Repeat("A", len(mac)),
		"no mac":       body,
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": deleteCode},
			InputResponses: yes, RequestState: state})
		require.NoError(t, err, name)
		assert.True(t, res.IsError, name)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "Nothing was approved", name)
	}
	// Another tool's name with this state is refused too.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "resume_python", Arguments: map[string]any{}, InputResponses: yes, RequestState: first.RequestState})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.EqualValues(t, 0, m.deletes.Load())

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": deleteCode},
		InputResponses: yes, RequestState: first.RequestState})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, deletedText, res.Content[0].(*mcp.TextContent).Text)
	assert.EqualValues(t, 1, m.deletes.Load())
	assert.Empty(t, u.asked(), "the server sent no elicitation/create of its own on the newest protocol")

	// The same answers again approve nothing more: the run is over.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": deleteCode},
		InputResponses: yes, RequestState: first.RequestState})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "is not paused")
	assert.EqualValues(t, 1, m.deletes.Load())
}

// TestApprovalOfHugeArguments: code that calls an approval tool with an
// argument of megabytes asks a question of bounded size: the message and
// the _meta carry the call clipped.
func TestApprovalOfHugeArguments(t *testing.T) {
	m := newRepoTools()
	u := &user{answers: []*mcp.ElicitResult{{Action: "decline"}}}
	cs := approvalClient(t, approvalExecutor(t, m, 0), mcpserver.Options{}, "2025-11-25", u)
	res, text := callTool(t, cs, "execute_python", map[string]any{"code": `try:
    await github.delete_repo(name="x" * 3_000_000)
except PermissionError:
    r = "refused"
r`})
	assert.False(t, res.IsError, text)
	assert.Equal(t, "'refused'", text)
	q := u.asked()
	require.Len(t, q, 1)
	raw, err := json.Marshal(q[0])
	require.NoError(t, err)
	assert.Less(t, len(raw), 8<<10, "the question is clipped")
	assert.Contains(t, q[0].Message, "(clipped)")
	assert.EqualValues(t, 0, m.deletes.Load())
}

// pyElicitClient is a client of the official MCP Python SDK over
// streamable HTTP whose elicitation_callback is the user: it approves the
// first question and declines the second, printing each question's
// message and each result's text.
const pyElicitClient = `
import sys

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

URL = sys.argv[1]
CODE = sys.argv[2]
answers = [types.ElicitResult(action="accept", content={"approve": True}), types.ElicitResult(action="decline")]


async def elicit(context, params):
    print("asked:", params.message.splitlines()[2])
    return answers.pop(0)


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def main():
    async with streamable_http_client(URL) as streams:
        async with ClientSession(streams[0], streams[1], elicitation_callback=elicit) as s:
            await s.initialize()
            for _ in range(2):
                print("result:", text_of(await s.call_tool("execute_python", {"code": CODE})).splitlines()[-1])


anyio.run(main)
`

// TestApprovalFromPythonClient: the official MCP Python SDK's client,
// whose elicitation_callback is the user, is asked about each approval:
// its approval makes the call, its refusal raises PermissionError. Needs
// MONTY_TEST_PYTHON (scripts/pyclients.sh).
func TestApprovalFromPythonClient(t *testing.T) {
	py := mcptest.Python(t, "a client")
	m := newRepoTools()
	srv, err := mcpserver.New(mcpserver.Options{Executor: approvalExecutor(t, m, 0)})
	require.NoError(t, err)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	script := filepath.Join(t.TempDir(), "elicit_client.py")
	require.NoError(t, os.WriteFile(script, []byte(pyElicitClient), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, hs.URL, deleteCode)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 4, stdout.String())
	assert.Equal(t, `asked: github.delete_repo(name='<b>demo</b>')`, lines[0])
	assert.Equal(t, `result: 'deleted <b>demo</b>'`, lines[1])
	assert.Equal(t, `asked: github.delete_repo(name='<b>demo</b>')`, lines[2])
	assert.Contains(t, lines[3], `result: 'refused: github.delete_repo was not approved`)
	assert.EqualValues(t, 1, m.deletes.Load())
}
