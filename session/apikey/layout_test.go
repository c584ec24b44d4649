package apikey_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/apikey"
)

func TestNamespaceOf(t *testing.T) {
	ns, ok := apikey.New([]string{"key-one-1234"}).Namespace("key-one-1234")
	require.True(t, ok)
	assert.Equal(t, ns, apikey.NamespaceOf("key-one-1234"), "the namespace a Set gives the key")
	// Pinned: every instance, of every version, puts a key's sessions here.
	assert.Equal(t, "ka8cafee66f5e281442992498", ns)
	assert.NotEqual(t, ns, apikey.NamespaceOf("key-one-1235"))
	assert.Equal(t, "kabc/mcp.notes", apikey.StoreID("kabc", "mcp.notes"))
}

func TestStateKey(t *testing.T) {
	signing := []byte("0123456789abcdef-signing")
	// Pinned: HMAC-SHA256(signing, "monty-go/state/v1\x00" ‖ ns ‖ 0 ‖ id),
	// computed independently; blobs stored by every version verify.
	assert.Equal(t, "a7fe97ec30f289b660f7f7f356912e4118f15c549f55ea8cacbce418ff8f9807",
		hex.EncodeToString(apikey.StateKey(signing, "kabc", "mcp.notes")))
	key := apikey.StateKey(signing, "kabc", "mcp")
	assert.NotEqual(t, key, apikey.StateKey(signing, "kabd", "mcp"), "another namespace")
	assert.NotEqual(t, key, apikey.StateKey(signing, "kabc", "mcq"), "another session")
	assert.NotEqual(t, key, apikey.StateKey([]byte("0123456789abcdef-other"), "kabc", "mcp"), "another signing key")
	assert.NotEqual(t, apikey.StateKey(signing, "ka", "bc"), apikey.StateKey(signing, "kab", "c"), "the separator keeps pairs apart")

	sign, verify := apikey.StoreKeys(signing, "kabc/mcp.notes")
	assert.Equal(t, apikey.StateKey(signing, "kabc", "mcp.notes"), sign)
	assert.Equal(t, [][]byte{signing}, verify, "the legacy key: the plain signing key")
	assert.Equal(t, apikey.LegacyKeys(signing), verify)
	sign, _ = apikey.StoreKeys(signing, "nons")
	assert.Equal(t, apikey.StateKey(signing, "nons", ""), sign)
}

func TestThreadSessionID(t *testing.T) {
	for _, c := range []struct{ thread, session, want string }{
		{"mcp", "", "mcp"},
		{"mcp", "scratch", "mcp.scratch"},
		{"mcp", "a.b", "mcp.a.b"},
		{"team_1-x", "v-2_b", "team_1-x.v-2_b"},
		{"t", strings.Repeat("s", apikey.MaxSessionID-2), "t." + strings.Repeat("s", apikey.MaxSessionID-2)},
	} {
		id, err := apikey.ThreadSessionID(c.thread, c.session)
		require.NoError(t, err, c)
		assert.Equal(t, c.want, id)
		assert.True(t, apikey.ValidSessionID(id), id)
	}
	for _, c := range []struct{ thread, session, says string }{
		{"", "", "thread key is empty"},
		{"", "s", "thread key is empty"},
		{"a.b", "", `thread key "a.b"`},
		{"a/b", "", `thread key "a/b"`},
		{"-x:y", "", `thread key "-x:y"`},
		{strings.Repeat("t", apikey.MaxSessionID+1), "", "thread key"},
		{"mcp", "a:b", `session_id "a:b"`},
		{"mcp", "../x", `session_id "../x"`},
		{"mcp", "a/b", `session_id "a/b"`},
		{"mcp", "<script>", `session_id "<script>"`},
		{"mcp", "a\x00b", `session_id "a\x00b"`},
		{"t", strings.Repeat("s", apikey.MaxSessionID-1), "at most 126"},
	} {
		_, err := apikey.ThreadSessionID(c.thread, c.session)
		require.ErrorIs(t, err, apikey.ErrBadSessionID, c)
		assert.Contains(t, err.Error(), c.says)
	}
}

// TestThreadSessionIDOneToOne: different (thread, session_id) pairs never
// share a session id, since a thread key has no '.'.
func TestThreadSessionIDOneToOne(t *testing.T) {
	seen := map[string][2]string{}
	for _, thread := range []string{"a", "a-b", "ab", "a_b"} {
		for _, s := range []string{"", "b", "b.c", "c", "-", ".b"} {
			id, err := apikey.ThreadSessionID(thread, s)
			require.NoError(t, err)
			prev, dup := seen[id]
			assert.False(t, dup, "%q from %q and %q", id, prev, [2]string{thread, s})
			seen[id] = [2]string{thread, s}
			th, rest, _ := strings.Cut(id, ".")
			assert.Equal(t, [2]string{thread, s}, [2]string{th, rest}, "the id splits back at its first '.'")
		}
	}
}

func TestValidSessionID(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.d", "_x", "-", strings.Repeat("x", 128)} {
		assert.True(t, apikey.ValidSessionID(ok), ok)
	}
	for _, bad := range []string{"", ".a", "a/b", "a:b", "a b", "é", strings.Repeat("x", 129), "a\n"} {
		assert.False(t, apikey.ValidSessionID(bad), bad)
	}
}
