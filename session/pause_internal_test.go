package session

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
)

// TestPausedRunSection: a paused run round-trips through blob version 4,
// and forged run sections are refused as corrupt.
func TestPausedRunSection(t *testing.T) {
	args, _ := object.Encode(object.Tuple{object.Str("q")})
	kwargs, _ := object.Encode(object.Dict{})
	zero := uint32(0)
	good := func() *pausedRun {
		return &pausedRun{ID: "r1", Code: "ask('q')", Expires: time.Unix(100, 0).UTC(), Tools: []ClientTool{{Name: "ask"}},
			Calls: []storedCall{{ID: 0, Name: "ask", Args: args, Kwargs: kwargs}}, Blocking: &zero, TTL: int64(time.Hour)}
	}
	b := &blob{MontyVersion: "1.4.0", Names: []string{}, JSON: []byte(`{}`), Dump: []byte("dump"), Run: good()}
	data, err := b.encode([]byte("k"), false)
	require.NoError(t, err)
	assert.Equal(t, byte(blobVersionRun), data[4])
	got, err := decodeBlob(data, [][]byte{[]byte("k")}, 0)
	require.NoError(t, err)
	assert.Equal(t, good(), got.Run)

	five := uint32(5)
	for name, forge := range map[string]func(r *pausedRun){
		"no id":            func(r *pausedRun) { r.ID = "" },
		"no calls":         func(r *pausedRun) { r.Calls = nil },
		"repeated call":    func(r *pausedRun) { r.Calls = append(r.Calls, r.Calls[0]) },
		"unnamed call":     func(r *pausedRun) { r.Calls[0].Name = "" },
		"blocking unknown": func(r *pausedRun) { r.Blocking = &five },
		"args not cbor":    func(r *pausedRun) { r.Calls[0].Args = []byte{0xff} },
		"args not a tuple": func(r *pausedRun) { r.Calls[0].Args = kwargs },
	} {
		r := good()
		forge(r)
		data, err := (&blob{MontyVersion: "1.4.0", Names: []string{}, JSON: []byte(`{}`), Dump: []byte("d"), Run: r}).encode(nil, false)
		require.NoError(t, err)
		_, err = decodeBlob(data, nil, 0)
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// TestNewerFormatIsNotCorrupt: a blob of a format version a newer build
// writes is not damaged: it is refused as newer, never kept aside as
// corrupt (which would start the session empty over it).
func TestNewerFormatIsNotCorrupt(t *testing.T) {
	data, err := (&blob{MontyVersion: "1.4.0", Names: []string{}, JSON: []byte(`{}`)}).encode(nil, false)
	require.NoError(t, err)
	data[4] = blobVersionMax + 1
	sum := sha256.Sum256(data[:len(data)-32])
	copy(data[len(data)-32:], sum[:]) // a newer build's intact envelope
	_, err = decodeBlob(data, nil, 0)
	require.ErrorIs(t, err, ErrNewerFormat)
	assert.NotErrorIs(t, err, ErrCorrupt)
	_, err = decodeBlob([]byte("MGOS\x09garbage"), nil, 0)
	assert.ErrorIs(t, err, ErrCorrupt, "a newer version number on a damaged blob")
	data[4] = 200
	_, err = decodeBlob(data, nil, 0)
	assert.ErrorIs(t, err, ErrCorrupt, "not a version any build writes")
}
