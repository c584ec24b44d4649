package session

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeysBounded: a session keeps the last KeysKept keys, none past
// KeyTTL, and of their answers the newest that fit in AnswersKept; the
// records of the state being replaced learn its size and hash.
func TestKeysBounded(t *testing.T) {
	now := time.Now()
	var older []keyRecord
	older = append(older, keyRecord{Key: "expired", At: now.Add(-KeyTTL - time.Second)})
	for i := range KeysKept {
		older = append(older, keyRecord{Key: strconv.Itoa(i), At: now.Add(-time.Hour), State: &keyState{SHA256: "old"}})
	}
	older[len(older)-1].State = nil // held by the state being replaced
	got := nextKeys(older, &keyState{Size: 7, SHA256: "replaced"}, &keyRecord{Key: "new", At: now}, now)
	require.Len(t, got, KeysKept)
	assert.Equal(t, "1", got[0].Key, "the expired key and the oldest are dropped")
	assert.Equal(t, "new", got[KeysKept-1].Key)
	assert.Equal(t, &keyState{Size: 7, SHA256: "replaced"}, got[KeysKept-2].State)
	assert.Equal(t, "old", got[0].State.SHA256)
	assert.Nil(t, older[len(older)-1].State, "the older records are not changed")
	assert.Nil(t, findKey(older, "expired", now), "an expired key is not found")
	assert.NotNil(t, findKey(got, "5", now))

	answer := json.RawMessage(`"` + strings.Repeat("a", AnswersKept/2) + `"`)
	records := []keyRecord{{Key: "a", At: now, Answer: answer}, {Key: "b", At: now, Answer: answer}}
	kept := nextKeys(records, nil, &keyRecord{Key: "c", At: now, Answer: answer}, now)
	require.Len(t, kept, 3)
	assert.Nil(t, kept[0].Answer, "the oldest answer is dropped past the budget")
	assert.Nil(t, kept[1].Answer)
	assert.Equal(t, answer, kept[2].Answer)

	huge := newKeyRecord(&Idempotency{Key: "h", Answer: func(*Result) []byte {
		return []byte(`"` + strings.Repeat("h", AnswersKept) + `"`)
	}}, &Result{}, false, now)
	assert.Nil(t, huge.Answer, "an answer over the budget is not kept")
	assert.Equal(t, AnswersKept+2, huge.AnswerSize)
	notJSON := newKeyRecord(&Idempotency{Key: "j", Answer: func(*Result) []byte { return []byte("{not json") }}, &Result{}, false, now)
	assert.Nil(t, notJSON.Answer)
}

// TestKeysFormat: keys make format version 8 (with or without a driver);
// they survive a round trip, and a keys section that is not a non-empty
// JSON array is corrupt.
func TestKeysFormat(t *testing.T) {
	keys := []keyRecord{{Key: "k", Fingerprint: "fp", At: time.Unix(1700000000, 0).UTC(), Answer: json.RawMessage(`{"a":1}`), AnswerSize: 7}}
	b := &blob{MontyVersion: "v", JSON: []byte("{}"), Names: []string{}, Dump: []byte("dump"), Keys: keys}
	data, err := b.encode(nil, false)
	require.NoError(t, err)
	assert.Equal(t, byte(blobVersionKeys), data[4])
	got, err := parseBlob(data, nil)
	require.NoError(t, err)
	assert.Equal(t, keys, got.Keys)
	assert.Nil(t, got.Driver)
	assert.Equal(t, []byte("dump"), got.Dump)

	b.Driver = &Driver{Name: "monty.v1"}
	data, err = b.encode(nil, false)
	require.NoError(t, err)
	got, err = parseBlob(data, nil)
	require.NoError(t, err)
	assert.Equal(t, "monty.v1", got.Driver.Name)
	assert.Equal(t, keys, got.Keys)

	_, err = parseBlob(notAnArray(t, data, keys), nil)
	require.ErrorIs(t, err, ErrCorrupt)
}
