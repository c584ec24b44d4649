package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestApprovalAudit: a decision made with a named API key is recorded
// under the name, one made with an unnamed key under its namespace, in
// GET /state/{id}/info and the log; the keys themselves appear nowhere.
// KeyNames naming a key that is not configured is a configuration error.
func TestApprovalAudit(t *testing.T) {
	const named, unnamed = "named-key-0123456789", "other-key-9876543210"
	m := newMCPTools()
	var logs bytes.Buffer
	srv := newServer(t, httpapi.Options{
		Session:   session.Options{Store: memstore.New(memstore.Options{})},
		Functions: m.approvalRegistry(t),
		APIKeys:   []string{named, unnamed},
		KeyNames:  map[string]string{named: "alice"},
		Logger:    slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	var sessions []string
	decide := func(key string, approve bool) httpapi.StateInfo {
		c := srv.client(key)
		body, _ := json.Marshal(map[string]any{"code": approvalCode})
		status, _, data := c.do("POST", "/exec", body)
		p := pausedAnswer(t, status, data)
		sessions = append(sessions, p.SessionID)
		status, _, data = c.do("POST", "/runs/"+p.RunID+"/resume", resumeBody(map[string]any{"id": p.Calls[0].ID, "approve": approve}))
		completedAnswer(t, status, data)
		status, _, data = c.do("GET", "/state/"+p.SessionID+"/info", nil)
		require.Equal(t, http.StatusOK, status, string(data))
		assert.NotContains(t, string(data), key)
		var info httpapi.StateInfo
		require.NoError(t, json.Unmarshal(data, &info))
		return info
	}
	info := decide(named, true)
	require.Len(t, info.Decisions, 1)
	d := info.Decisions[0]
	assert.Equal(t, "alice", d.Who)
	assert.Equal(t, "everything.echo", d.Tool)
	assert.Equal(t, `everything.echo(message='hi')`, d.Args)
	assert.Equal(t, "ok", d.Outcome)
	assert.True(t, d.Approved)

	info = decide(unnamed, false)
	require.Len(t, info.Decisions, 1)
	d = info.Decisions[0]
	assert.Regexp(t, `^key [0-9a-f]{16}$`, d.Who)
	assert.NotEqual(t, "key "+apikey.NamespaceOf(unnamed)[1:17], d.Who, "no plain hash of the key")
	assert.Equal(t, "denied", d.Outcome)
	assert.False(t, d.Approved)
	assert.Equal(t, int32(1), m.echoes.Load())

	log := logs.String()
	assert.Contains(t, log, `"msg":"approval decision"`)
	assert.Contains(t, log, `"who":"alice"`)
	assert.NotContains(t, log, named)
	assert.NotContains(t, log, unnamed)

	// The console shows them on the session's page, as text.
	b := srv.browser(t)
	b.signIn(named)
	resp, page := b.get("/ui/s/" + sessions[0])
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	assert.Contains(t, page, `id="decision-list"`)
	assert.Contains(t, page, `<td class="who">alice</td>`)
	assert.Contains(t, page, `everything.echo(message=&#39;hi&#39;)`)
	assert.Contains(t, page, `<td class="outcome">ok</td>`)
	assert.NotContains(t, page, named)

	_, err := httpapi.New(httpapi.Options{
		Keeper:   newKeeper(t, memstore.New(memstore.Options{}), session.ManagerOptions{}),
		Session:  session.Options{SigningKey: testKey},
		APIKeys:  []string{named},
		KeyNames: map[string]string{"not-a-configured-key": "bob"},
	})
	require.ErrorIs(t, err, httpapi.ErrConfig)
	assert.Contains(t, err.Error(), "KeyNames")
	assert.False(t, strings.Contains(err.Error(), "not-a-configured-key"), "the error does not repeat a key")
}
