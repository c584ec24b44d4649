package agenttest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
