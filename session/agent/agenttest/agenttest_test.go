package agenttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agent/agenttest"
)

func TestExecutorOffersDouble(t *testing.T) {
	exec := agenttest.Executor(t)
	assert.Contains(t, exec.Tool().Description, agenttest.FuncName)
	for i, want := range []string{agent.ToolName, agent.ResumeToolName} {
		tool := exec.Tools()[i]
		assert.Equal(t, want, tool.Name)
		agenttest.AssertTool(t, tool, tool.Name, tool.Description, tool.Parameters)
	}
}

func TestArgs(t *testing.T) {
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(agenttest.Args(agenttest.SetSecret)), &got))
	assert.Equal(t, agenttest.Input(agenttest.SetSecret), got)
	assert.Equal(t, "city = ask_user('Which city?')\ncity.upper()", agenttest.PauseInput()["code"])
}

func TestResumeArgs(t *testing.T) {
	out := "Paused: run_id \"r1\" waits for\n- id \"c1\": ask_user('Which city?')\n"
	assert.Equal(t, "r1", agenttest.RunID(out))
	assert.Equal(t, "c1", agenttest.AskUserID(out))
	args, ok := agenttest.ResumeArgs(out)
	require.True(t, ok)
	assert.JSONEq(t, `{"run_id":"r1","results":[{"id":"c1","value":"Paris"}]}`, args)
	_, ok = agenttest.ResumeArgs("no run here")
	assert.False(t, ok)
}

func TestAPI(t *testing.T) {
	api := agenttest.NewAPI(t, agenttest.APIOptions{
		Accept: func(r *http.Request) (int, string) {
			if r.URL.Path != "/v1/chat" {
				return http.StatusNotFound, "unexpected " + r.URL.Path
			}
			return 0, ""
		},
		Header: http.Header{"Content-Type": {"application/json"}},
	})
	api.Reply(`{"n":1}`)
	api.ReplyWith(func(req map[string]any) string { return `{"echo":` + agenttest.JSONString(req["q"].(string)) + `}` })
	post := func(path, body string) (int, string) {
		resp, err := http.Post(api.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := post("/v1/chat", `{"q":"a"}`)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, `{"n":1}`, body)
	status, body = post("/v1/chat", `{"q":"b"}`)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, `{"echo":"b"}`, body)
	status, _ = post("/other", `{}`)
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = post("/v1/chat", `not JSON`)
	assert.Equal(t, http.StatusBadRequest, status)
	status, _ = post("/v1/chat", `{"q":"c"}`)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Equal(t, 3, api.Count())
	assert.Equal(t, "b", api.Request(t, 1)["q"])
}

func TestParallel(t *testing.T) {
	seen := make([]string, 3)
	agenttest.Parallel(t, len(seen), func(i int, conversation string) error {
		seen[i] = conversation
		return nil
	})
	assert.Equal(t, []string{"par-0", "par-1", "par-2"}, seen)
}

func TestSeveralCalls(t *testing.T) {
	a := agent.Adapter{Exec: agenttest.Executor(t), Name: "montytest"}
	calls := agenttest.SeveralCalls()
	require.Len(t, calls, 6)
	for _, c := range calls {
		out, failed, err := a.Answer(context.Background(), "several", c.Name, json.RawMessage(c.Args))
		require.NoError(t, err, c.ID)
		c.AssertOutput(t, out)
		assert.Equal(t, c.Failed, failed, c.ID)
	}
	rec := &recorder{TB: t}
	calls[1].AssertOutput(rec, "16")
	calls[2].AssertOutput(rec, "something else")
	calls[2].AssertOutput(rec, "Traceback: "+calls[2].Want)
	assert.Len(t, rec.errs, 2)
}

func TestAssertToolObjects(t *testing.T) {
	exec := agenttest.Executor(t)
	var got []map[string]any
	for _, tool := range exec.Tools() {
		got = append(got, map[string]any{"name": tool.Name, "description": tool.Description, "schema": tool.Parameters})
	}
	agenttest.AssertToolObjects(t, exec.Tools(), got, "schema")

	rec := &recorder{TB: t}
	agenttest.AssertToolObjects(rec, exec.Tools(), got[:1], "schema")
	agenttest.AssertToolObjects(rec, exec.Tools(), got, "parameters")
	require.Len(t, rec.errs, 3)
	assert.Contains(t, rec.errs[0], "1 tools, want 2")
	assert.Contains(t, rec.errs[1], "tool execute_python: schema")
}

func TestCallerErrors(t *testing.T) {
	execute := func(a agent.Adapter) func(context.Context, string) (any, error) {
		return func(ctx context.Context, conversation string) (any, error) {
			out, _, err := a.Answer(ctx, conversation, agent.ToolName, json.RawMessage(agenttest.Args("1 + 1")))
			return out, err
		}
	}
	exec := agenttest.Executor(t)
	a := agent.Adapter{Exec: exec, Name: "montytest"}
	agenttest.CallerErrors(t, exec, "montytest", execute(a), execute(a))
	_, err := exec.Execute(context.Background(), "after", json.RawMessage(agenttest.Args("1")))
	assert.ErrorIs(t, err, session.ErrClosed, "CallerErrors closes the executor")

	// Errors that do not begin with the adapter's name are reported.
	exec = agenttest.Executor(t)
	rec := &recorder{TB: t}
	agenttest.CallerErrors(rec, exec, "montyother", execute(agent.Adapter{Exec: exec, Name: "montytest"}))
	require.Len(t, rec.errs, len(agenttest.BadConversationKeys())+2)
	for _, e := range rec.errs {
		assert.Contains(t, e, `does not name "montyother: "`)
	}

	// So is output that comes with an error.
	exec = agenttest.Executor(t)
	rec = &recorder{TB: t}
	agenttest.CallerErrors(rec, exec, "montytest", func(ctx context.Context, conversation string) (any, error) {
		out, err := execute(agent.Adapter{Exec: exec, Name: "montytest"})(ctx, conversation)
		if err != nil {
			return []string{"half an answer"}, err
		}
		return out, nil
	})
	require.Len(t, rec.errs, len(agenttest.BadConversationKeys())+2)
	for _, e := range rec.errs {
		assert.Contains(t, e, "output [half an answer] with the error")
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
