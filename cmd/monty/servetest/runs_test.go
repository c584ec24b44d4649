package servetest

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type runAnswer struct {
	Status    string `json:"status"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Calls     []struct {
		ID   string            `json:"id"`
		Name string            `json:"name"`
		Args []json.RawMessage `json:"args"`
	} `json:"calls"`
	Result json.RawMessage `json:"result"`
}

func decodeRun(t *testing.T, status int, data []byte, err error) runAnswer {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, string(data))
	var a runAnswer
	require.NoError(t, json.Unmarshal(data, &a))
	return a
}

// TestPausedRunSurvivesItsInstance: two monty serve processes share Redis.
// A run pauses at client tools on the first, which is then killed (no
// graceful stop); the second resumes it, and racing resumes of its next
// pause on both instances let exactly one through.
func TestPausedRunSurvivesItsInstance(t *testing.T) {
	store := redisSpec(t)
	const key = "runs-test-key"
	a := serve(t, "--store", store, "--api-key", key)
	b := serve(t, "--store", store, "--api-key", key)
	c := serve(t, "--store", store, "--api-key", key)

	body := mustJSON(map[string]any{
		"code": `
import asyncio
plan = ask('what first?')
async def both():
    return await asyncio.gather(fetch('x'), fetch('y'))
got = await both()
(plan, got)`,
		"tools": []map[string]any{{"name": "ask"}, {"name": "fetch", "async": true}},
	})
	status, _, data, err := a.do("POST", "/exec", body, "x-api-key", key)
	p := decodeRun(t, status, data, err)
	require.Equal(t, "paused", p.Status)
	require.Len(t, p.Calls, 1)

	// The instance that paused the run dies.
	require.NoError(t, a.cmd.Process.Kill())
	<-a.exited

	status, _, data, err = b.do("POST", "/runs/"+p.RunID+"/resume", mustJSON(map[string]any{"results": []map[string]any{{"id": p.Calls[0].ID, "value": "tea"}}}), "x-api-key", key)
	p2 := decodeRun(t, status, data, err)
	require.Equal(t, "paused", p2.Status)
	require.Len(t, p2.Calls, 2, "both gathered calls, in one pause")

	results := mustJSON(map[string]any{"results": []map[string]any{{"id": p2.Calls[0].ID, "value": 1}, {"id": p2.Calls[1].ID, "value": 2}}})
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	answers := make([][]byte, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := []*instance{b, c}[i%2]
			statuses[i], _, answers[i], _ = in.do("POST", "/runs/"+p2.RunID+"/resume", results, "x-api-key", key)
		}()
	}
	wg.Wait()
	won := -1
	for i, s := range statuses {
		if s == http.StatusOK {
			assert.Equal(t, -1, won, "a second resume won: %v", statuses)
			won = i
		} else {
			assert.Equal(t, http.StatusConflict, s, string(answers[i]))
		}
	}
	require.NotEqual(t, -1, won, "one resume wins: %v", statuses)
	done := decodeRun(t, statuses[won], answers[won], nil)
	assert.Equal(t, "completed", done.Status)
	assert.JSONEq(t, `["tea", [1, 2]]`, string(done.Result))

	status, _, data, err = c.do("POST", "/exec", mustJSON(map[string]any{"session_id": p.SessionID, "code": "plan"}), "x-api-key", key)
	after := decodeRun(t, status, data, err)
	assert.JSONEq(t, `"tea"`, string(after.Result))
}
