package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
)

// TestDecisionsBounded: a session keeps the newest MaxDecisions.
func TestDecisionsBounded(t *testing.T) {
	var older []Decision
	for i := range MaxDecisions {
		older = append(older, Decision{CallID: strconv.Itoa(i)})
	}
	got := withDecisions(older, []Decision{{CallID: "new"}})
	require.Len(t, got, MaxDecisions)
	assert.Equal(t, "1", got[0].CallID)
	assert.Equal(t, "new", got[MaxDecisions-1].CallID)
	assert.Equal(t, "0", older[0].CallID, "the older list is not changed")
}

// TestDecisionsFormat: decisions make format version 6, with the dump in
// parts or whole (a paused run); they survive a round trip, and a
// decisions section that is not a non-empty JSON array is corrupt.
func TestDecisionsFormat(t *testing.T) {
	d := []Decision{{Who: "ops", Tool: "ops.wipe", CallID: "3", Approved: true, Outcome: DecisionOK}}
	b := &blob{MontyVersion: "v", JSON: []byte("{}"), Names: []string{}, Dump: []byte("dump"), Decisions: d}
	data, err := b.encode(nil, false)
	require.NoError(t, err)
	assert.Equal(t, byte(blobVersionAudit), data[4])
	got, err := parseBlob(data, nil)
	require.NoError(t, err)
	assert.Equal(t, d, got.Decisions)
	assert.Equal(t, []byte("dump"), got.Dump)
	assert.Nil(t, got.Run)

	b.Decisions = nil
	data, err = b.encode(nil, false)
	require.NoError(t, err)
	assert.Equal(t, byte(blobVersion), data[4], "no decisions: the older versions, for older builds")

	bad := &blob{MontyVersion: "v", JSON: []byte("{}"), Names: []string{}, Decisions: []Decision{{}}}
	data, err = bad.encode(nil, false)
	require.NoError(t, err)
	_, err = parseBlob(notAnArray(t, data, bad.Decisions), nil)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "decisions")
}

// notAnArray is data, an unsigned blob holding the JSON array of section,
// with that array replaced by an object of the same length and the
// checksum made right again.
func notAnArray(t *testing.T, data []byte, section any) []byte {
	t.Helper()
	js, _ := json.Marshal(section)
	body := data[:len(data)-32]
	i := bytes.Index(body, js)
	require.GreaterOrEqual(t, i, 0)
	copy(body[i:], append(append([]byte("{"), bytes.Repeat([]byte(" "), len(js)-2)...), '}'))
	sum := sha256.Sum256(body)
	return append(body, sum[:]...)
}

// TestOriginOfOlderRecords: a run record of an older build has no origin;
// its own id stands in, so its calls keep their keys once it is resumed
// and paused again (the origin is carried from then on).
func TestOriginOfOlderRecords(t *testing.T) {
	rec := &pausedRun{ID: "old1", Calls: []storedCall{storeCallOf(t, 1), storeCallOf(t, 2)}}
	var old map[string]any
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &old))
	assert.NotContains(t, old, "origin", "nothing new is written for a record without it")
	assert.NotContains(t, old, "claim")
	p := rec.public("sid")
	var r runs
	r.paused = &activeRun{rec: rec}
	r.resumed(r.paused, []ToolResult{{ID: "1"}}, nil, true)
	assert.Equal(t, "old1", r.paused.rec.Origin)
	next := r.paused.rec
	next.ID = "new2"
	assert.Equal(t, p.Calls[1].IdempotencyKey, next.public("sid").Calls[0].IdempotencyKey)
}

// storeCallOf is a stored call id with no arguments.
func storeCallOf(t *testing.T, id uint32) storedCall {
	t.Helper()
	a, err := object.Encode(object.Tuple{})
	require.NoError(t, err)
	k, err := object.Encode(object.Dict{})
	require.NoError(t, err)
	return storedCall{ID: id, Name: "ask", Args: a, Kwargs: k}
}
